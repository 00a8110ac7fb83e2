"""What the test scripts share: failures, skips, running commands, and
running one named check in a scratch directory with meson's exit codes
(0 pass, 1 fail, 77 skip)."""
import os
import shutil
import subprocess
import tempfile


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def run(cmd, env=None, check=True, **kw):
    """Run CMD with text output captured.  TALLY_OUTPUT and TALLY_DUMP_ON
    are not inherited, so a developer's settings cannot change a test; ENV
    adds to the environment.  CHECK: a non-zero exit is a Failure."""
    full = dict(os.environ)
    full.pop("TALLY_OUTPUT", None)
    full.pop("TALLY_DUMP_ON", None)
    full.update(env or {})
    p = subprocess.run(cmd, env=full, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, **kw)
    if check and p.returncode != 0:
        raise Failure("command failed (%d): %s\n%s%s"
                      % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return p


def expect(cond, msg):
    if not cond:
        raise Failure(msg)


def run_check(checks, name, args, prefix):
    """Run checks[NAME](ARGS, WORK) in a fresh scratch directory WORK and
    return the exit status for meson."""
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        checks[name](args, work)
        print("ok:", name)
        return 0
    except Failure as e:
        print("FAIL: %s\n%s" % (name, e))
        return 1
    except Skip as e:
        print("skipped: %s %s" % (name, e))
        return 77
    finally:
        shutil.rmtree(work, ignore_errors=True)
