"""The pytest plugin, exercised in inner pytest sessions (pytester)."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
# Every test here runs an inner pytest session in a subprocess (about a second each).
pytestmark = [pytest.mark.slow, pytest.mark.parallel]

# Once the project is installed the entry point loads the plugin by itself; loading it twice
# would be an error, so only ask for it explicitly when it is not installed.
_INSTALLED = any(ep.name == "streamfns_cassettes" for ep in entry_points(group="pytest11"))
_PLUGIN_ARGS = () if _INSTALLED else ("-p", "cassettes.pytest_plugin")

_INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
"""

# The inner tests' "network": an httpx MockTransport that also counts its calls in a file.
_TEST_MODULE = """
from pathlib import Path

import httpx
import pytest

CALLS = Path(__file__).parent / "calls.txt"


def network() -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        with CALLS.open("a") as log:
            log.write(request.content.decode() + "\\n")
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b"data: hi\\n\\n")

    return httpx.MockTransport(handler)


async def test_hello(cassette):
    async with cassette.client(real_transport=network()) as http:
        response = await http.post("https://api.example.test/v1/messages", json={"model": "m"})
    assert response.text == "data: hi\\n\\n"


@pytest.mark.cassette("shared/custom.jsonl", mode="once")
async def test_marked(cassette):
    assert cassette.mode in ("once", "none", "rewrite")
    async with cassette.client(real_transport=network()) as http:
        await http.post("https://api.example.test/v1/messages", json={"model": "marked"})


@pytest.mark.parametrize("n", [1])
async def test_param(cassette, n):
    assert cassette.path.name == "test_param_1.jsonl"


def test_untouched():
    assert True
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # hypothesis' plugin costs about a second per inner session and the inner tests never use it.
    return pytester.runpytest_subprocess(*_PLUGIN_ARGS, "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(_INI)
    pytester.makepyfile(test_inner=_TEST_MODULE)
    return pytester


def _calls(pytester: pytest.Pytester) -> list[str]:
    log = Path(pytester.path) / "calls.txt"
    return log.read_text().splitlines() if log.exists() else []


def test_mode_none_is_the_default_and_a_missing_cassette_is_reported(project: pytest.Pytester) -> None:
    result = _run(project, "-k", "hello")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CassetteMissing*does not exist and mode is 'none'*"])
    assert _calls(project) == []


def test_once_records_to_the_default_path_and_then_replays(project: pytest.Pytester) -> None:
    first = _run(project, "-k", "hello", "--cassette-mode", "once")
    first.assert_outcomes(passed=1)
    recorded = Path(project.path) / "cassettes" / "test_inner" / "test_hello.jsonl"
    assert recorded.exists()
    assert _calls(project) == ['{"model":"m"}']
    second = _run(project, "-k", "hello")
    second.assert_outcomes(passed=1)
    assert _calls(project) == ['{"model":"m"}'], "the replay did not touch the network"


def test_the_marker_sets_path_and_mode_and_the_command_line_wins(project: pytest.Pytester) -> None:
    _run(project, "-k", "marked").assert_outcomes(passed=1)
    custom = Path(project.path) / "shared" / "custom.jsonl"
    assert custom.exists()
    assert len(_calls(project)) == 1
    _run(project, "-k", "marked").assert_outcomes(passed=1)  # once + existing file: replay
    assert len(_calls(project)) == 1
    _run(project, "-k", "marked", "--cassette-mode", "rewrite").assert_outcomes(passed=1)
    assert len(_calls(project)) == 2


def test_parametrized_names_become_portable_file_names(project: pytest.Pytester) -> None:
    _run(project, "-k", "param").assert_outcomes(passed=1)


def test_the_plugin_is_inert_for_other_tests_and_registers_its_marker(project: pytest.Pytester) -> None:
    result = _run(project, "-k", "untouched or marked", "--strict-markers", "--cassette-mode", "once")
    result.assert_outcomes(passed=2)
    markers = _run(project, "--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.cassette(path=None, *"])


def test_a_bad_mode_is_a_usage_error(project: pytest.Pytester) -> None:
    result = _run(project, "--cassette-mode", "sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
