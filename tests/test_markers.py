"""The test markers of tests/conftest.py: ``data`` and ``subprocess`` are given automatically
from what a test reaches (its source, its decorators, the fixtures and module-level helpers
it uses), ``need`` refuses a test that reads the shared data unmarked, and the markers are
registered (``--strict-markers``)."""
import subprocess
import sys
import textwrap

import conftest
import pytest

SOURCE = textwrap.dedent('''
    import subprocess
    import sys
    from conftest import data_path, need

    WSJ = str(data_path("ptb", "wsj-sample.mrg"))
    needs = pytest.mark.skipif(not WSJ, reason="x")


    def run_cli(*args):
        return subprocess.run([sys.executable, "-m", "fastspectral", *args])


    def helper():
        return run_cli("--version")


    def python():
        return sys.executable


    @pytest.fixture
    def trees():
        return open(WSJ).read()


    def test_plain():
        assert 1 + 1 == 2


    def test_through_helpers():
        helper()


    def test_executable_only():
        assert python()


    def test_fixture(trees):
        assert trees


    @needs
    def test_decorated():
        pass


    def test_need():
        need(WSJ)


    def test_local_import():
        from conftest import EVALB
        assert EVALB


    class TestGroup:
        def test_method(self):
            run_cli()
''')


class Item:
    """What ModuleUses reads of a collected test."""

    def __init__(self, name, fixturenames=(), cls=None):
        self.originalname = self.name = name
        self.fixturenames = list(fixturenames)
        self.cls = cls


class TestGroup:
    """Stands for the class of SOURCE."""

    __test__ = False


DATA = conftest.ModuleUses(SOURCE).data_roots()
PROCESS = conftest._PROCESS_NAMES | {"sys.executable"}


@pytest.mark.parametrize("name,fixtures,cls,data,process", [
    ("test_plain", (), None, False, False),
    ("test_through_helpers", (), None, False, True),
    ("test_executable_only", (), None, False, True),
    ("test_fixture", ("trees",), None, True, False),
    ("test_decorated", (), None, True, False),
    ("test_need", (), None, True, False),
    ("test_local_import", (), None, True, False),
    ("test_method", (), TestGroup, False, True),
])
def test_module_uses(name, fixtures, cls, data, process):
    uses = conftest.ModuleUses(SOURCE)
    item = Item(name, fixtures, cls)
    assert uses.item_reaches(item, DATA) is data
    assert uses.item_reaches(item, PROCESS) is process


def test_names_of_this_file_without_conftest_imports_are_not_data():
    """``DATA`` of a module that does not import it from conftest is not the shared data."""
    uses = conftest.ModuleUses("DATA = 'x'\ndef test_a():\n    assert DATA\n")
    assert not uses.item_reaches(Item("test_a"), uses.data_roots())


def test_a_subprocess_test_is_marked(request):
    proc = subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, text=True)
    assert proc.stdout == "1\n"
    assert request.node.get_closest_marker("subprocess") is not None
    assert request.node.get_closest_marker("data") is None


def test_a_data_test_is_marked(request, shared_data):
    assert shared_data.is_dir()
    assert request.node.get_closest_marker("data") is not None


def test_a_plain_test_is_not_marked(request):
    assert request.node.get_closest_marker("data") is None
    assert request.node.get_closest_marker("subprocess") is None


def test_need_refuses_an_unmarked_test(request, tmp_path):
    assert request.node.get_closest_marker("data") is None
    with pytest.raises(pytest.fail.Exception, match="not marked 'data'"):
        conftest.need(tmp_path)


def test_markers_are_registered(pytestconfig):
    names = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert {"data", "slow", "subprocess"} <= names
    assert "--strict-markers" in pytestconfig.getini("addopts")
