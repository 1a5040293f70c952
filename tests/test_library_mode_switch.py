"""The `library-mode` setting: on by default, off for a project (`library-mode = false`), for
some files (`library-mode-exclude`), or for a folder with its own configuration."""

from __future__ import annotations

import json

# a layer no call in the file reaches: in library mode its plain attribute meets the caller's inputs
LAYER = '''\
import torch
import torch.nn as nn


class ScaledNorm(nn.Module):
    """Normalises its input; its users move it to the GPU."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.scale = torch.full((dim,), dim ** -0.5)

    def forward(self, x):
        return x / x.norm(dim=-1, keepdim=True) * self.scale * self.weight
'''


def _findings(out) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in json.loads(out.stdout)["findings"]:
        found.setdefault(finding["path"].replace("\\", "/"), []).append(finding["code"])
    return found


def _layers(project) -> None:
    project.write("pkg/layers.py", LAYER)
    project.write("scripts/layer_copy.py", LAYER)


def test_library_mode_is_on_by_default(project, invoke) -> None:
    _layers(project)
    found = _findings(invoke("check", "--no-cache", "--format", "json", "."))
    assert found == {"pkg/layers.py": ["DEV104"], "scripts/layer_copy.py": ["DEV104"]}


def test_library_mode_false_turns_it_off_for_the_project(project, invoke) -> None:
    _layers(project)
    project.write("pyproject.toml", "[tool.devlint]\nlibrary-mode = false\n")
    out = invoke("check", "--no-cache", "--format", "json", ".")
    assert _findings(out) == {} and out.exit_code == 0


def test_library_mode_exclude_turns_it_off_for_matching_files(project, invoke) -> None:
    _layers(project)
    project.write("pyproject.toml", "[tool.devlint]\nlibrary-mode-exclude = ['scripts/']\n")
    found = _findings(invoke("check", "--no-cache", "--format", "json", "."))
    assert found == {"pkg/layers.py": ["DEV104"]}


def test_a_folder_configuration_turns_it_off_there(project, invoke) -> None:
    _layers(project)
    project.write("scripts/devlint.toml", "library-mode = false\n")
    found = _findings(invoke("check", "--no-cache", "--format", "json", "."))
    assert found == {"pkg/layers.py": ["DEV104"]}


def test_the_result_cache_tells_the_settings_apart(project, invoke) -> None:
    _layers(project)
    first = _findings(invoke("check", "--format", "json", "pkg"))
    project.write("pyproject.toml", "[tool.devlint]\nlibrary-mode = false\n")
    second = _findings(invoke("check", "--format", "json", "pkg"))
    assert first == {"pkg/layers.py": ["DEV104"]} and second == {}


def test_a_library_mode_that_is_not_a_boolean_is_a_configuration_error(project, invoke) -> None:
    _layers(project)
    project.write("pyproject.toml", "[tool.devlint]\nlibrary-mode = 'off'\n")
    out = invoke("check", "--no-cache", ".")
    assert out.exit_code == 2
    assert "library-mode: must be true or false" in out.stderr
