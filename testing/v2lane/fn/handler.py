"""The v2 lane's warm function: reports its cgroup, holds a request open, or runs out of memory."""
import subprocess


def main(event):
    op = event.get("op", "cg")
    if op == "oom":
        blob = b"x" * (512 << 20)  # past the function's 64M
        return {"len": len(blob)}
    if op == "hold":
        # A child with a unique command line, so the lane can find this request's cgroup.
        subprocess.run(["/bin/sleep", event["sleep"]], check=True)
    with open("/proc/self/cgroup") as f:
        return {"cgroup": f.read().strip()}
