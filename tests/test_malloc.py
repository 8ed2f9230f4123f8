"""The allocator settings of the parse path (fastspectral._memory.keep_chart_memory): set once
per process on glibc, skipped with FASTSPECTRAL_MALLOC=system, and the parses do not depend on
them."""
import os
import subprocess
import sys

import pytest

CODE = ("import fastspectral._memory as m; a = m.keep_chart_memory(); "
        "b = m.keep_chart_memory(); print(a, b)")


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (AttributeError, ValueError, OSError):
        return False


def _run(env_value):
    env = dict(os.environ)
    env.pop("FASTSPECTRAL_MALLOC", None)
    if env_value is not None:
        env["FASTSPECTRAL_MALLOC"] = env_value
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


@pytest.mark.skipif(not _glibc(), reason="mallopt settings apply to glibc only")
def test_kept_on_glibc_once_per_process():
    assert _run(None) == ["True", "True"]


@pytest.mark.parametrize("value", ["system", "SYSTEM", "off", "0", "default"])
def test_opt_out(value):
    assert _run(value) == ["False", "False"]


def test_same_parses_either_way(tmp_path):
    """A PCFG parses the same trees whether the allocator keeps chart memory or not."""
    code = (
        "import fastspectral as fs\n"
        "from fastspectral.synthetic import LatentPCFG\n"
        "g = LatentPCFG.default(seed=3)\n"
        "train, test = g.sample(300, seed=1), g.sample(40, seed=2)\n"
        "m = fs.PCFG().fit(train)\n"
        "print('\\n'.join(str(t) for t in m.parse([t.leaves() for t in test], jobs=2)))\n")
    script = tmp_path / "p.py"
    script.write_text(code)
    outs = []
    for value in (None, "system"):
        env = dict(os.environ)
        env.pop("FASTSPECTRAL_MALLOC", None)
        if value:
            env["FASTSPECTRAL_MALLOC"] = value
        outs.append(subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                                   text=True, check=True).stdout)
    assert outs[0] == outs[1] and outs[0].count("\n") == 40
