"""The source line that makes a named holder grow: ``losses.append(loss)``, ``total += loss``.

tracemalloc names the line that *allocated* what leaked, which in a framework is a line
of the framework (or the user's ``trainer.train()`` call). What a person edits is the
line that *keeps* it: the append to the holder, the ``+=`` on the accumulator. Given a
holder path the agent reported (``train.py:main:trainer.callbacks[0].history``,
``__main__.losses``) and the user's source files, this finds that line by reading the
file's syntax tree: no code of the target runs, and a file that is gone or does not
parse gives nothing.
"""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache
from typing import Iterable, List, Optional, Tuple

# methods that add to a container
_GROWERS = frozenset(
    ["append", "extend", "insert", "add", "update", "appendleft", "extendleft", "setdefault"]
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def holder_names(holder: str) -> Tuple[Optional[str], Optional[str], List[str]]:
    """(file's base name or None, function or None, the attribute names along the path).

    ``train.py:main:self.history[0].buf`` -> ("train.py", "main", ["self", "history", "buf"]);
    ``__main__.losses`` -> (None, None, ["__main__", "losses"]).
    """
    parts = holder.split(":")
    if len(parts) >= 3 and parts[0].endswith(".py"):
        file, func, path = parts[0], parts[1], ":".join(parts[2:])
    else:
        file, func, path = None, None, holder
    return file, func, _NAME.findall(re.sub(r"\[[^\]]*\]", "", path))


def _target_name(node: ast.AST) -> Optional[str]:
    """The last name of an assignment target / call receiver: ``self.history`` -> history."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _grows(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.AugAssign):
        return _target_name(node.target) == name
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in _GROWERS and _target_name(node.func.value) == name
    if isinstance(node, ast.Assign):
        for t in node.targets:
            if isinstance(t, ast.Subscript) and _target_name(t.value) == name:
                return True  # cache[key] = value
            if _target_name(t) == name and any(
                isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.value)
            ):
                return True  # running = running * 0.9 + x
    return False


# what a statement adds is already a number or cut from its graph: not where a leak of
# tensors is kept (``losses.append(loss.item())`` beside ``losses.append(loss)``)
_PLAIN_CALLS = frozenset(["item", "tolist", "detach", "numpy", "float", "int", "str", "len"])


def _plain(node: ast.AST) -> bool:
    value: Optional[ast.AST] = None
    if isinstance(node, ast.AugAssign):
        value = node.value
    elif isinstance(node, ast.Call):
        value = node.args[-1] if node.args else None
    elif isinstance(node, ast.Assign):
        value = node.value
    if isinstance(value, ast.IfExp):  # ``x.item() if fixed else x``: either may run
        return False
    if isinstance(value, ast.Call):
        f = value.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        return name in _PLAIN_CALLS
    return isinstance(value, ast.Constant)


@lru_cache(maxsize=64)
def _tree(path: str) -> Optional[ast.AST]:
    try:
        with open(path, encoding="utf-8") as f:
            return ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def grow_line(holder: str, files: Iterable[str]) -> Optional[str]:
    """``file:line`` of the statement that grows ``holder``, searched in the given user
    files whose base name matches; inside the named function first, then anywhere in the
    file (a callback's method appends to what ``main()`` reaches through the trainer)."""
    file, func, names = holder_names(holder)
    if not names:
        return None
    name = names[-1]
    for path in files:
        if file is not None and os.path.basename(path) != file:
            continue
        tree = _tree(os.path.abspath(path))
        if tree is None:
            continue
        scopes: List[ast.AST] = []
        if func:
            scopes.extend(
                n
                for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func
            )
        scopes.append(tree)
        for scope in scopes:
            hits = sorted(
                (_plain(n), getattr(n, "lineno", 0)) for n in ast.walk(scope) if _grows(n, name)
            )
            if hits:
                return f"{_short(path)}:{hits[0][1]}"
    return None


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path
