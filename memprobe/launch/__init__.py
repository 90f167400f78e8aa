"""Start the target under the bootstrap and follow it to its end: check the command, prepare
the run folder, spawn, forward signals, relay the terminal, sample the process tree from
outside (RSS, USS/PSS, NVML, the OOM killer), tail the agents' files into a
``memprobe.collect`` state, reap the target and decode its exit.

Nothing here renders: the live view is a ``Display`` handed in by the command.
"""
