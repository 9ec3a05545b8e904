"""`make setup`'s installer: the machine's pip configuration becomes uv's options (tools/install_pins.py)."""

import importlib.util
import subprocess

import pytest

from vqalib.core.io import project_root

spec = importlib.util.spec_from_file_location("install_pins", project_root() / "tools" / "install_pins.py")
install_pins = importlib.util.module_from_spec(spec)
spec.loader.exec_module(install_pins)

LISTED = """:env:.find-links='/opt/env-wheels'
:env:.default-timeout='180'
global.find-links='{wheels}'
global.extra-index-url='file://{index} file:///nowhere/simple https://mirror.example/simple'
global.constraint='{constraints}'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.index-url='https://pypi.example/simple'
global.no-index='false'
"""


@pytest.fixture
def listed(tmp_path, monkeypatch):
    (tmp_path / "wheels").mkdir()
    (tmp_path / "index").mkdir()
    (tmp_path / "constraints.txt").write_text("torch<=2.14.1\n")
    text = LISTED.format(wheels=tmp_path / "wheels", index=tmp_path / "index", constraints=tmp_path / "constraints.txt")
    monkeypatch.setattr(install_pins.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=text, stderr=""))
    return tmp_path


def test_pip_variables_come_first_and_every_value_once(listed):
    settings = install_pins.pip_settings("python")
    assert settings["find-links"] == ["/opt/env-wheels", str(listed / "wheels")]
    assert settings["extra-index-url"] == [f"file://{listed / 'index'}", "file:///nowhere/simple",
                                           "https://mirror.example/simple"]


def test_indexes_wheels_and_constraints_become_uv_options(listed, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("UV_HTTP_TIMEOUT", raising=False)
    options, environment = install_pins.uv_arguments(install_pins.pip_settings("python"))
    pairs = list(zip(options[::2], options[1::2]))
    # a local folder or file index that does not exist is left out, as pip ignores it; remote ones are kept
    assert ("--find-links", "/opt/env-wheels") not in pairs and ("--find-links", str(listed / "wheels")) in pairs
    assert ("--extra-index-url", f"file://{listed / 'index'}") in pairs
    assert ("--extra-index-url", "https://mirror.example/simple") in pairs
    assert not any("nowhere" in value for _, value in pairs)
    assert ("--constraint", str(listed / "constraints.txt")) in pairs
    assert ("--index-url", "https://pypi.example/simple") in pairs and "--no-index" not in options
    assert environment == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "UV_HTTP_TIMEOUT": "180"}


def test_a_variable_the_user_set_is_not_overridden(listed, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", "/my/ca.pem")
    _, environment = install_pins.uv_arguments(install_pins.pip_settings("python"))
    assert "SSL_CERT_FILE" not in environment
