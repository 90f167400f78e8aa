"""The core function behind each CLI command, one module per command (as memray's
``commands/``): ``run``, ``report``, ``diff``; what they share is in ``_common``.

The CLI (``memprobe.cli``) only parses, calls one of these and maps errors to exit codes.
"""
