"""The user's roots: which code is the target's own (not the agent, the standard library
or an installed package), and where a walk from the roots starts: the target's own
modules (``__main__`` first) and the function frames of its code in every thread.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any, Dict, List, Optional, Tuple

from . import frames
from .holders import Step

_HERE = os.path.dirname(os.path.abspath(__file__))


def library_dirs() -> List[str]:
    """Where the standard library and installed packages live (not the target's own code).

    From ``sys`` alone: ``sysconfig`` would import a ``_sysconfigdata`` module into the target.
    """
    dirs = set()
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        for lib in ("lib", "lib64", "Lib"):
            dirs.add(os.path.abspath(os.path.join(prefix, lib, version)))
            dirs.add(os.path.abspath(os.path.join(prefix, lib)))
    for p in sys.path:
        if p.endswith(("site-packages", "dist-packages")):
            dirs.add(os.path.abspath(p))
    return sorted(dirs)


LIBS = library_dirs()
USER: Dict[str, bool] = {}  # module name -> the target's own code (not stdlib, not installed)
_USER_FILE: Dict[str, bool] = {}  # co_filename -> the target's own code

# (label, origin, first steps and values): where a walk starts
Start = Tuple[str, Optional[Tuple[Any, ...]], List[Tuple[Step, Any]]]


def is_user_file(filename: str) -> bool:
    """Code the target wrote: not the agent, the standard library or an installed package
    (``<stdin>``, ``<string>`` and notebook cells count as the user's)."""
    known = _USER_FILE.get(filename)
    if known is None:
        if filename.startswith(_HERE):
            known = False
        elif filename.startswith("<"):
            known = not filename.startswith("<frozen")
        else:
            path = os.path.abspath(filename)
            known = not any(path.startswith(x + os.sep) for x in LIBS)
        _USER_FILE[filename] = known
    return known


def is_user_module(name: str) -> bool:
    """A module of the target's own code (known once the walk has looked at it)."""
    return bool(USER.get(name))


def modules(libs: List[str]) -> Tuple[List[Tuple[str, Any]], List[Tuple[str, Any]]]:
    user: List[Tuple[str, Any]] = []
    lib: List[Tuple[str, Any]] = []
    for name, mod in list(sys.modules.items()):
        if type(mod) is not types.ModuleType or name.startswith("memprobe_agent"):
            continue
        d = vars(mod)
        if name == "__main__":
            user.insert(0, (name, d))
            continue
        is_user = USER.get(name)
        if is_user is None:
            path = d.get("__file__")
            is_user = USER[name] = isinstance(path, str) and not any(
                os.path.abspath(path).startswith(x + os.sep) for x in libs
            )
        (user if is_user else lib).append((name, d))
    return user, lib


def frame_roots() -> List[Start]:
    """The target's own function frames in every thread, outermost first, with their locals
    (read through ``frames.local_items``: nothing is left referenced by the frame)."""
    out: List[Start] = []
    for whose, stack in frames.thread_stacks():
        mine = [f for f in stack if is_user_file(f.f_code.co_filename)]
        for f in reversed(mine):  # outermost first: main() before the step it calls
            code = f.f_code
            label = f"{os.path.basename(code.co_filename)}:{code.co_name}"
            origin = ("frame", frames.code_key(code))
            items = frames.local_items(f, whose)
            out.append((label, origin, [(("local", k), v) for k, v in items]))
    return out


def function_children(fn: types.FunctionType) -> List[Tuple[Step, Any]]:
    """A function's closure cells (by the variable's name) and its default arguments."""
    out: List[Tuple[Step, Any]] = []
    code = fn.__code__
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            out.append((("closure", name), cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    defaults = fn.__defaults__ or ()
    params = code.co_varnames[code.co_argcount - len(defaults) : code.co_argcount]
    out.extend((("default", p), v) for p, v in zip(params, defaults))
    out.extend((("default", k), v) for k, v in (fn.__kwdefaults__ or {}).items())
    return out


def signal_roots() -> List[Start]:
    """The Python functions installed as signal handlers (``signal.signal(SIGUSR1, dump)``):
    the interpreter keeps them in a C table no referrer search reaches, and a handler that
    closes over a job and chains to the one before it keeps every job it was made for.
    Read with ``_signal.getsignal`` (a C getter), only where the target imported ``signal``."""
    mod = sys.modules.get("signal")
    if type(mod) is not types.ModuleType:
        return []
    out: List[Start] = []
    for num, name in sorted(_signal_names(vars(mod)).items()):
        handler = signal_handler(num)
        if handler is not None and is_user_file(handler.__code__.co_filename):
            label = f"signal.getsignal(signal.{name})"
            out.append((label, ("signal", num), function_children(handler)))
    return out


def signal_handler(num: int) -> Optional[types.FunctionType]:
    """The Python function handling signal ``num``, or None (``_signal.getsignal``: C)."""
    getsignal = getattr(sys.modules.get("_signal"), "getsignal", None)
    try:
        handler = getsignal(num) if getsignal is not None else None
    except (ValueError, OSError, TypeError):
        return None
    return handler if type(handler) is types.FunctionType else None


def _signal_names(ns: Dict[str, Any]) -> Dict[int, str]:
    """Signal number -> its name (``SIGUSR1``), from the module's own constants."""
    out: Dict[int, str] = {}
    for k, v in list(ns.items()):
        if k.startswith("SIG") and not k.startswith(("SIG_", "SIGRT")) and isinstance(v, int):
            out.setdefault(int(v), k)
    return out


MAX_GENERATORS = 64  # suspended generators and coroutines of the target's made roots, per census
# those of the census under way: the census taker fills it from the object pass and empties it
# when the census ends (nothing of the program's is kept past a census)
CENSUS_SUSPENDED: List[Any] = []
SUSPENDABLE = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


def _frame_of(obj: Any) -> Tuple[Any, Any, bool]:
    """(frame, code, running) of a generator, coroutine or async generator."""
    if type(obj) is types.GeneratorType:
        return obj.gi_frame, obj.gi_code, bool(obj.gi_running)
    if type(obj) is types.CoroutineType:
        return obj.cr_frame, obj.cr_code, bool(obj.cr_running)
    return obj.ag_frame, obj.ag_code, bool(obj.ag_running)


def user_generators(gens: List[Any]) -> List[Any]:
    """Of the generators, coroutines and async generators the census' object pass found, the
    suspended ones of the target's own code (at most ``MAX_GENERATORS``)."""
    out: List[Any] = []
    for gen in gens:
        frame, code, running = _frame_of(gen)
        if frame is not None and not running and is_user_file(code.co_filename):
            out.append(gen)
            if len(out) >= MAX_GENERATORS:
                break
    return out


def suspended_roots() -> List[Start]:
    """The census' suspended generators and coroutines (``CENSUS_SUSPENDED``) as roots, named
    ``file:function`` with their locals below (``reader.py:iter_frames:buf``,
    ``service.py:_batch_loop:self._pending``): a generator a ``for`` loop iterates is on the
    running frame's stack, which no local names and no referrer search reads (3.11 visits a
    running frame's stack for nothing), and an asyncio task waiting in ``await`` is on no
    stack at all, so what their locals keep is out of every other root's reach."""
    out: List[Start] = []
    for gen in CENSUS_SUSPENDED:
        frame, code, _ = _frame_of(gen)
        if frame is not None:
            label = f"{os.path.basename(code.co_filename)}:{code.co_name}"
            out.append((label, None, suspended_locals(gen)))
    return out


def suspended_locals(obj: Any) -> List[Tuple[Step, Any]]:
    """A generator's, coroutine's or async generator's locals as ``("genlocal", name)``
    steps (none once it has finished), read as a suspended frame's unless another thread
    runs it now (see ``frames.local_items``)."""
    frame, _, running = _frame_of(obj)
    if frame is None:
        return []
    items = frames.local_items(frame, frames.OTHER if running else frames.SUSPENDED)
    return [(("genlocal", k), v) for k, v in items]
