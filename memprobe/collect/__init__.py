"""From what a run wrote to a run record: wire messages and outside samples held in bounded
buffers per process, roles inferred (main, rank, worker, child), the record assembled; a run
folder rebuilt into a record after the fact; several nodes' records merged into one.

Pure bookkeeping: no threads, no terminal, no analysis.
"""
