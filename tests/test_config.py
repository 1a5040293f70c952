"""Configuration files and rule selection: found where expected, wrong settings named precisely."""

from __future__ import annotations

import pytest

from devlint.config import ConfigError, find_config, load_config
from devlint.selection import Layer, SelectionError, parse_codes, resolve

pytestmark = pytest.mark.usefixtures("fake_registry")

DEFAULTS = {"DEV000", "DEV101", "DEV107", "DEV201"}  # DEV301 is off by default in the fake registry


# --- finding the file -------------------------------------------------------------------------


def test_nearest_pyproject_with_a_devlint_table(project):
    project.write("pyproject.toml", "[tool.devlint]\nignore = ['DEV201']\n")
    project.write("pkg/pyproject.toml", "[project]\nname = 'x'\n")  # no devlint table: passed over
    project.write("pkg/sub/a.py", "")
    found = find_config(project.root / "pkg" / "sub" / "a.py")
    assert found == project.root / "pyproject.toml"
    config = load_config(start=project.root / "pkg" / "sub")
    assert config.ignore == ("DEV201",)
    assert config.root == project.root


def test_devlint_toml_wins_in_the_same_folder(project):
    project.write("pyproject.toml", "[tool.devlint]\nignore = ['DEV201']\n")
    project.write("devlint.toml", "ignore = ['DEV107']\n")
    config = load_config(start=project.root)
    assert config.source.name == "devlint.toml"
    assert config.ignore == ("DEV107",)


def test_no_config_means_defaults(project):
    config = load_config(start=project.root)
    assert config.source is None and config.select is None and config.exclude == ()


def test_explicit_config_file(project):
    project.write("cfg/settings.toml", "select = ['dev1']\nfail-on = 'Error'\n")
    config = load_config(project.root / "cfg" / "settings.toml")
    assert config.select == ("DEV1",)
    assert config.fail_on == "error"
    assert config.root == project.root / "cfg"


def test_every_key_is_read(project):
    project.write(
        "pyproject.toml",
        """
        [tool.devlint]
        select = ["DEV1"]
        extend-select = ["DEV301"]
        ignore = ["DEV107"]
        exclude = ["tests/fixtures/"]
        fail-on = "info"
        device-helpers = ["utils.get_device"]
        move-helpers = ["utils.to_device", "move"]

        [tool.devlint.per-file-ignores]
        "scripts/*.py" = ["DEV101"]
        """,
    )
    config = load_config(start=project.root)
    assert config.exclude == ("tests/fixtures/",)
    assert config.per_file_ignores == (("scripts/*.py", ("DEV101",)),)
    assert config.device_helpers == ("utils.get_device",)
    assert config.move_helpers == ("utils.to_device", "move")
    assert resolve([config.layer()]) == {"DEV000", "DEV101", "DEV301"}


# --- errors name the file and the key --------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "key", "detail"),
    [
        ("selct = ['DEV1']", "selct", "unknown setting"),
        ("extend_select = ['DEV1']", "extend_select", "did you mean `extend-select`"),
        ("select = 'DEV101'", "select", "list of strings"),
        ("ignore = [101]", "ignore", "list of strings"),
        ("select = ['DEV999']", "select", "DEV999"),
        ("extend-select = ['DEVX']", "extend-select", "DEVX"),
        ("fail-on = 'sometimes'", "fail-on", "error, warning, info, never"),
        ("device-helpers = ['not a name']", "device-helpers", "dotted name"),
        ("per-file-ignores = ['x']", "per-file-ignores", "table"),
        ("[tool.devlint.per-file-ignores]\n'a.py' = ['DEV998']", "per-file-ignores", "DEV998"),
    ],
)
def test_bad_settings_name_the_file_and_key(project, body, key, detail):
    project.write("pyproject.toml", "[tool.devlint]\n" + body + "\n", dedent=False)
    with pytest.raises(ConfigError) as info:
        load_config(start=project.root)
    message = str(info.value)
    assert "pyproject.toml" in message
    assert key in message
    assert detail in message


def test_bad_toml_is_a_config_error(project):
    project.write("devlint.toml", "select = [\n")
    with pytest.raises(ConfigError, match=r"devlint\.toml.*invalid TOML"):
        load_config(start=project.root)


def test_devlint_table_must_be_a_table(project):
    project.write("pyproject.toml", "[tool]\ndevlint = 3\n")
    with pytest.raises(ConfigError, match=r"\[tool\.devlint\] must be a table"):
        load_config(start=project.root)


# --- per-file-ignores -------------------------------------------------------------------------


def test_per_file_ignores_match_relative_paths_and_bare_names(project):
    project.write(
        "devlint.toml",
        """
        [per-file-ignores]
        "scripts/*.py" = ["DEV101"]
        "__init__.py" = ["DEV1"]
        """,
    )
    config = load_config(start=project.root)
    assert config.ignored_for("scripts/run.py") == {"DEV101"}
    assert config.ignored_for(str(project.root / "scripts" / "run.py")) == {"DEV101"}
    assert config.ignored_for("pkg/__init__.py") == {"DEV101", "DEV107"}
    assert config.ignored_for("train.py") == frozenset()


# --- selection ---------------------------------------------------------------------------------


def test_parse_codes_accepts_commas_spaces_and_case():
    assert parse_codes(["dev101, DEV2", "ALL"]) == ("DEV101", "DEV2", "ALL")
    assert parse_codes("DEV1,DEV2") == ("DEV1", "DEV2")


def test_defaults_are_the_default_enabled_rules():
    assert resolve([]) == DEFAULTS


def test_select_prefixes_and_all():
    assert resolve([Layer(select=("DEV1",))]) == {"DEV000", "DEV101", "DEV107"}
    assert resolve([Layer(select=("DEV10",))]) == {"DEV000", "DEV101", "DEV107"}
    assert resolve([Layer(select=("DEV107",))]) == {"DEV000", "DEV107"}
    assert resolve([Layer(select=("ALL",))]) == DEFAULTS | {"DEV301"}


def test_extend_select_adds_and_ignore_removes():
    assert resolve([Layer(extend_select=("DEV3",))]) == DEFAULTS | {"DEV301"}
    assert resolve([Layer(ignore=("DEV2",))]) == DEFAULTS - {"DEV201"}


def test_more_specific_selector_wins_within_a_layer():
    assert resolve([Layer(select=("DEV1",), ignore=("DEV101",))]) == {"DEV000", "DEV107"}
    assert resolve([Layer(select=("DEV101",), ignore=("DEV1",))]) == {"DEV000", "DEV101"}


def test_later_layers_override_earlier_ones():
    config = Layer(select=("DEV1",), ignore=("DEV107",))
    assert resolve([config, Layer(extend_select=("DEV201",))]) == {"DEV000", "DEV101", "DEV201"}
    # a command-line select starts over, so it can turn back on what the file ignored
    assert resolve([config, Layer(select=("DEV107",))]) == {"DEV000", "DEV107"}


def test_parse_errors_stay_on_unless_ignored_by_exact_code():
    assert "DEV000" in resolve([Layer(select=("DEV2",))])
    assert "DEV000" in resolve([Layer(ignore=("ALL",))])
    assert "DEV000" not in resolve([Layer(ignore=("DEV000",))])


def test_unknown_selector_is_an_error_naming_its_origin():
    with pytest.raises(SelectionError, match=r"--ignore: unknown rule code or prefix 'DEV1O1'"):
        resolve([Layer(ignore=("DEV1O1",), origin="--{key}")])
