"""``memprobe run --step-on SPEC``: each return of one function is a step, no code changed.

SPEC is ``FILE:FUNCTION`` (``train.py:evaluate``) or ``MODULE:QUALNAME``
(``envs.cartpole:CartPole.step``); a QUALNAME may name a method (``Class.method``),
not a function nested in another (``<locals>``: a new one is made on every call).
A step is counted when a call returns (a call that raises is not a step); for a
generator or coroutine function, when it is called. ``optimizer.step()`` then
no longer counts: the function is the program's step.

How the calls are seen:

- Python >= 3.12: ``sys.monitoring``. ``PY_START`` is on for all code until the
  function runs for the first time; each other code object is looked at once
  (its first call) and switched off (``DISABLE``). From then on only that code
  object has an event (``PY_RETURN``): nothing else in the program pays.
- older Pythons: the function is replaced, where it is bound (the module's or the
  class' namespace), by a wrapper that counts. A function of an imported module is
  wrapped as soon as the module's body has run (an import hook wraps the loader's
  ``exec_module``). A function of the main script is wrapped right after its
  ``def`` has run: a trace function is on for the main script's top-level code
  only until then (the other frames get no local trace), and is taken off at once;
  it is never put on when the script's source binds no such name, and a
  background look at ``__main__`` takes over after ``TRACE_FOR_S``. A reference
  the program took before the wrapping (``cb = evaluate`` in the module body)
  still calls the original.

A SPEC that never matched a function is reported at exit (an event, and one line
at the end of ``memprobe run``); the target runs as it would anyway.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
import types
from typing import Any, Callable, List, Optional, Set

from .typeinfo import mro, type_dict
from .wire import parse_spec

TRACE_FOR_S = 10.0
# inspect's CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR (inspect is slow to import)
_CO_COROUTINE = 0x80
_GEN_FLAGS = 0x20 | _CO_COROUTINE | 0x200
_TOOL_IDS = (4, 3, 5, 2)  # free sys.monitoring ids first (0 debugger, 1 coverage)


class StepOn:
    def __init__(
        self, spec: str, step: Callable[[], None], event: Callable[[str, str], None]
    ) -> None:
        self.spec = spec
        self.kind, self.target, self.qualname = parse_spec(spec)
        self.step = step
        self.event = event
        self.matched = False
        self.problem: Optional[str] = None
        self.cwd = os.getcwd()
        self.file = (
            os.path.realpath(os.path.join(self.cwd, self.target)) if self.kind == "file" else ""
        )
        self.first = self.qualname.split(".")[0]
        self.tail = os.sep + os.path.normpath(self.target).lstrip(os.sep + ".")
        self._lock = threading.Lock()
        self._tool: Optional[int] = None
        self._finder: Optional[_Finder] = None
        self._trace_until = 0.0

    # -- start -------------------------------------------------------------------------------

    def start(self) -> None:
        if "monitoring" in sys.__dict__:
            self._start_monitoring()
            return
        if self.kind == "module" and self.target != "__main__" and self.target in sys.modules:
            self._patch_module(sys.modules[self.target])
            return
        if self._is_main_target():
            if self._main_binds_name() and sys.gettrace() is None:
                self._trace_until = time.monotonic() + TRACE_FOR_S
                sys.settrace(self._global_trace)
            return
        self._finder = _Finder(self)
        sys.meta_path.insert(0, self._finder)

    def poll(self) -> None:
        """From the agent's thread (older Pythons): the main module, when the trace has given
        up or never ran (``-m``, a name bound late): a call before this look is not counted."""
        if self.matched or self._tool is not None or time.monotonic() < self._trace_until:
            return
        main = sys.modules.get("__main__")
        ns = main.__dict__ if main is not None else {}
        if self.first not in ns:
            return
        spec = ns.get("__spec__")
        if self.kind == "file":
            ok = self._file_matches(str(ns.get("__file__") or ""))
        else:
            ok = getattr(spec, "name", None) == self.target
        if ok:
            self._patch_namespace(ns, "__main__")

    def unmatched(self) -> Optional[str]:
        if self.matched:
            return None
        why = f" ({self.problem})" if self.problem else ""
        return f"--step-on {self.spec} never matched a function{why}"

    def close(self) -> None:
        if self._tool is not None:
            mon: Any = sys.__dict__["monitoring"]
            try:
                mon.set_events(self._tool, 0)
                mon.free_tool_id(self._tool)
            except Exception:  # noqa: BLE001
                pass
            self._tool = None

    # -- which code / module / file ----------------------------------------------------------

    def _file_matches(self, filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        real = os.path.realpath(os.path.join(self.cwd, filename))
        return real == self.file or (not os.path.isabs(self.target) and real.endswith(self.tail))

    def _is_main_target(self) -> bool:
        if self.kind == "file":
            argv0 = sys.argv[0] if sys.argv else ""
            return self._file_matches(argv0)
        if self.target == "__main__":
            return True
        orig = list(getattr(sys, "orig_argv", []))
        return "-m" in orig[:-1] and orig[orig.index("-m") + 1] == self.target

    def _main_binds_name(self) -> bool:
        """Whether the main script's source binds the first name of QUALNAME at module level
        (a ``def``, ``class``, assignment or import, also inside if/try/with/for blocks)."""
        path = sys.argv[0] if self.kind == "file" else None
        if not path:
            return True  # -m: the source is found later; trust the spec for TRACE_FOR_S
        import ast  # only here: the agent starts in every Python process

        try:
            with open(path, "rb") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, ValueError):
            return True
        first = self.qualname.split(".")[0]
        return first in _module_bindings(tree.body)

    # -- Python >= 3.12: sys.monitoring ------------------------------------------------------

    def _start_monitoring(self) -> None:
        mon: Any = sys.__dict__["monitoring"]
        for tool in _TOOL_IDS:
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, "memprobe")
                self._tool = tool
                break
        else:
            self.problem = "every sys.monitoring tool id is taken"
            return
        mon.register_callback(self._tool, mon.events.PY_START, self._on_first_start)
        mon.set_events(self._tool, mon.events.PY_START)

    def _on_first_start(self, code: types.CodeType, offset: int) -> Any:
        mon: Any = sys.__dict__["monitoring"]
        if code.co_qualname != self.qualname or self.matched:
            return mon.DISABLE
        if self.kind == "file":
            if not self._file_matches(code.co_filename):
                return mon.DISABLE
        else:
            frame = sys._getframe(1)  # the function's own frame: its module's name
            if frame.f_code is not code or frame.f_globals.get("__name__") != self.target:
                return mon.DISABLE
        tool = self._tool
        self.matched = True
        at_call = bool(code.co_flags & _GEN_FLAGS)
        event = mon.events.PY_START if at_call else mon.events.PY_RETURN
        mon.set_events(tool, 0)
        mon.register_callback(tool, mon.events.PY_START, None)
        mon.register_callback(tool, event, self._on_event)
        mon.set_local_events(tool, code, event)
        self._said(code, "sys.monitoring")
        if at_call:
            self.step()
        return None

    def _on_event(self, code: types.CodeType, offset: int, *rest: Any) -> Any:
        self.step()
        return None

    # -- older Pythons: a wrapper where the function is bound --------------------------------

    def _global_trace(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if self.matched or time.monotonic() > self._trace_until:
            sys.settrace(None)
            return None
        if event == "call" and frame.f_code.co_name == "<module>":
            if frame.f_globals.get("__name__") == "__main__":
                return self._main_line
        return None

    def _main_line(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        ns = frame.f_globals
        if self.first in ns:
            self._patch_namespace(ns, "__main__")
        if self.matched or time.monotonic() > self._trace_until:
            self._stop_trace(frame)
            return None
        return self._main_line

    def _stop_trace(self, frame: types.FrameType) -> None:
        frame.f_trace = None
        if sys.gettrace() == self._global_trace:
            sys.settrace(None)

    def _patch_module(self, module: types.ModuleType) -> None:
        if self.kind == "file" and not self._file_matches(str(module.__dict__.get("__file__"))):
            return
        self._patch_namespace(module.__dict__, module.__name__)

    def _patch_namespace(self, ns: Any, where: str) -> None:
        with self._lock:
            if self.matched:
                return
            parts = self.qualname.split(".")
            owner: Any = None
            obj: Any = ns.get(parts[0])
            for part in parts[1:]:
                if not isinstance(obj, type):
                    self.problem = f"{where}.{parts[0]} is not a class"
                    return
                owner, obj = obj, _class_attr(obj, part)
            wrapped = self._wrap(obj)
            if wrapped is None:
                self.problem = f"{where}.{self.qualname} is a {type(obj).__name__}, not a function"
                return
            if owner is None:
                ns[parts[0]] = wrapped
            else:
                setattr(owner, parts[-1], wrapped)
            self.matched = True
            fn = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
            self._said(fn.__code__, "a wrapper")
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)

    def _wrap(self, obj: Any) -> Any:
        if isinstance(obj, (staticmethod, classmethod)):
            inner = self._wrap(obj.__func__)
            return type(obj)(inner) if inner is not None else None
        if not isinstance(obj, types.FunctionType):
            return None
        fn, step = obj, self.step
        if fn.__code__.co_flags & _CO_COROUTINE:

            @functools.wraps(fn)
            async def step_on_async(*args: Any, **kwargs: Any) -> Any:
                result = await fn(*args, **kwargs)
                step()
                return result

            return step_on_async
        at_call = bool(fn.__code__.co_flags & _GEN_FLAGS)

        @functools.wraps(fn)
        def step_on(*args: Any, **kwargs: Any) -> Any:
            if at_call:
                step()
                return fn(*args, **kwargs)
            result = fn(*args, **kwargs)
            step()
            return result

        return step_on

    def _said(self, code: types.CodeType, how: str) -> None:
        where = f"{os.path.relpath(code.co_filename, self.cwd)}:{code.co_firstlineno}"
        self.event("step_on", f"--step-on {self.spec}: a step at each return of {where} ({how})")


class _Finder:
    """A meta path finder that only wraps the loader of the module the SPEC names."""

    def __init__(self, owner: StepOn) -> None:
        self.owner = owner
        self._busy = threading.local()
        if owner.kind == "module":
            self.names = [owner.target]
            self.stem = ""
        else:
            base = os.path.basename(owner.target)
            stem = base[:-3] if base.endswith(".py") else base
            if stem == "__init__":  # a package: the module is named after its folder
                stem = os.path.basename(os.path.dirname(owner.target))
            self.stem = stem
            self.names = []

    def _wanted(self, fullname: str) -> bool:
        if self.names:
            return fullname in self.names
        return fullname.rpartition(".")[2] == self.stem

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if self.owner.matched or not self._wanted(fullname) or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            spec = _find_with_others(self, fullname, path, target)
        finally:
            self._busy.on = False
        loader = getattr(spec, "loader", None) if spec is not None else None
        if loader is None or isinstance(loader, type):
            return spec
        if self.owner.kind == "file" and not self.owner._file_matches(str(spec.origin)):
            return spec
        original = loader.exec_module
        owner = self.owner

        def exec_module(module: types.ModuleType) -> None:
            original(module)
            try:
                owner._patch_module(module)
            except Exception as e:  # noqa: BLE001 - never break the target's import
                owner.problem = f"{type(e).__name__}: {e}"

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            owner.problem = f"cannot wrap the loader of {fullname}"
        return spec


def _find_with_others(me: Any, fullname: str, path: Any, target: Any) -> Any:
    for finder in list(sys.meta_path):
        if finder is me:
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec = find(fullname, path, target)
        if spec is not None:
            return spec
    return None


def _class_attr(cls: type, name: str) -> Any:
    """The raw attribute (staticmethod and classmethod objects unwrapped by nothing)."""
    for base in mro(cls):
        ns = type_dict(base)
        if name in ns:
            return ns[name]
    return None


def _module_bindings(body: List[Any]) -> Set[str]:
    import ast

    blocks = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)
    names: Set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        if isinstance(node, blocks):  # statements inside run at module level too
            for field in ("body", "orelse", "finalbody"):
                names |= _module_bindings(getattr(node, field, None) or [])
            for handler in getattr(node, "handlers", None) or []:
                names |= _module_bindings(handler.body)
    return names
