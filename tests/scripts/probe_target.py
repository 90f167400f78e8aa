"""A target that reports what it sees of its own process, then exits as asked."""

import json
import os
import sys

info = {
    "name": __name__,
    "argv": sys.argv,
    "cwd": os.getcwd(),
    "torch_loaded": "torch" in sys.modules,
    "memprobe_loaded": any(m == "memprobe" or m.startswith("memprobe.") for m in sys.modules),
    "agent_loaded": "memprobe_agent" in sys.modules,
    "sitecustomize": getattr(sys.modules.get("sitecustomize"), "MARKER", None),
    "path_has_bootstrap": any(p.rstrip("/").endswith("bootstrap") for p in sys.path),
    "path_has_site_packages_of_memprobe": any("memprobe" in p for p in sys.path),
}
out = os.environ.get("PROBE_OUT")
if out:
    with open(out, "w") as f:
        json.dump(info, f)
print("stdout-line")
print("stderr-line", file=sys.stderr)
mode = os.environ.get("PROBE_EXIT", "0")
if mode == "raise":
    raise RuntimeError("boom from target")
if mode == "msg":
    sys.exit("bye message")
sys.exit(int(mode))
