"""Shared by the Python checks that run `idforge serve` (tests/redis_clients/check.py,
tests/security/check.py): stopping a server and saying what went wrong with it."""
import subprocess


def stop_server(proc, log):
    """Stops `proc` with SIGTERM (SIGKILL after 10 s); returns what went wrong with it,
    if anything (an exit other than the clean one after SIGTERM, a sanitizer's report),
    from `log()`, its stderr so far; None when it stopped cleanly."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return "did not stop within 10 s of SIGTERM"
    text = log()
    if "Sanitizer" in text or "runtime error:" in text:
        return "a sanitizer reported:\n" + text[-4000:]
    if proc.returncode != 0:
        return f"exited {proc.returncode}:\n" + text[-2000:]
    return None
