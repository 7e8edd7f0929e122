"""`${provider:path:key}` references resolved as Kafka's File, Directory and EnvVar config providers do."""

from __future__ import annotations

import pytest

from mirror_engine.mm2 import ConfigProviderError, ConfigProviders

FILE = "org.apache.kafka.common.config.provider.FileConfigProvider"
DIRECTORY = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
ENV = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
SECRET = "s3cret-value"


def _providers(entries: dict[str, str], environ: dict[str, str] | None = None) -> ConfigProviders:
    providers, problems = ConfigProviders.from_entries(entries, environ or {})
    assert problems == []
    return providers


def test_file_provider_reads_a_properties_file_as_utf8(tmp_path):
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("password = caf\u00e9-" + SECRET + "\nuser: mirror\n", encoding="utf-8")
    providers = _providers({"config.providers": "file", "config.providers.file.class": FILE})
    value = providers.resolve("a.sasl.jaas.config", f'u="${{file:{secrets}:user}}" p="${{file:{secrets}:password}}"')
    assert value == f'u="mirror" p="caf\u00e9-{SECRET}"'


def test_directory_provider_reads_the_file_named_by_the_key(tmp_path):
    (tmp_path / "password").write_text(SECRET, encoding="utf-8")
    providers = _providers({"config.providers": "dir", "config.providers.dir.class": DIRECTORY})
    assert providers.resolve("k", f"${{dir:{tmp_path}:password}}") == SECRET


def test_env_provider_reads_the_environment_and_allowlist():
    entries = {"config.providers": "env", "config.providers.env.class": ENV,
               "config.providers.env.param.allowlist.pattern": "MM2_.*"}
    providers = _providers(entries, {"MM2_PASSWORD": SECRET, "OTHER": "x"})
    assert providers.resolve("k", "${env:MM2_PASSWORD}") == SECRET
    with pytest.raises(ConfigProviderError) as caught:
        providers.resolve("k", "${env:OTHER}")
    assert "allowlist" in str(caught.value)


def test_env_reference_can_stay_an_engine_reference():
    providers = _providers({"config.providers": "env", "config.providers.env.class": ENV}, {"PW": SECRET})
    assert providers.resolve("k", "x${env:PW}y", defer_env=True) == "x${PW}y"


def test_text_without_references_is_unchanged():
    assert _providers({}).resolve("k", "plain $ {text}") == "plain $ {text}"


def test_missing_key_in_file_names_the_setting_and_reference_not_values(tmp_path):
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"password = {SECRET}\n", encoding="utf-8")
    providers = _providers({"config.providers": "file", "config.providers.file.class": FILE})
    with pytest.raises(ConfigProviderError) as caught:
        providers.resolve("b.sasl.jaas.config", f'p="${{file:{secrets}:pasword}}"')
    message = str(caught.value)
    assert "pasword" in message and str(secrets) in message and SECRET not in message


def test_missing_file_and_directory_entries(tmp_path):
    providers = _providers({"config.providers": "file,dir", "config.providers.file.class": FILE,
                            "config.providers.dir.class": DIRECTORY})
    with pytest.raises(ConfigProviderError, match="cannot read"):
        providers.resolve("k", f"${{file:{tmp_path / 'nope.properties'}:x}}")
    with pytest.raises(ConfigProviderError, match="no file"):
        providers.resolve("k", f"${{dir:{tmp_path}:missing}}")


def test_allowed_paths_limit_the_file_provider(tmp_path):
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    (outside / "s.properties").write_text("k = v\n", encoding="utf-8")
    providers = _providers({"config.providers": "file", "config.providers.file.class": FILE,
                            "config.providers.file.param.allowed.paths": str(inside)})
    with pytest.raises(ConfigProviderError, match=r"allowed\.paths"):
        providers.resolve("k", f"${{file:{inside}/../out/s.properties:k}}")


def test_env_provider_refuses_a_path():
    providers = _providers({"config.providers": "env", "config.providers.env.class": ENV}, {"X": "1"})
    with pytest.raises(ConfigProviderError, match="path"):
        providers.resolve("k", "${env:/etc:X}")


def test_undeclared_provider_is_an_error_naming_it():
    with pytest.raises(ConfigProviderError) as caught:
        _providers({}).resolve("a.ssl.key.password", "${vault:secret/kafka:pw}")
    assert "'vault'" in str(caught.value) and "config.providers" in str(caught.value)


def test_declarations_that_mm2_cannot_use_are_problems():
    entries = {"config.providers": "vault, file, env",
               "config.providers.vault.class": "com.acme.VaultConfigProvider",
               "config.providers.env.class": ENV}
    _, problems = ConfigProviders.from_entries(entries, {})
    assert [line.split(": ", 1)[0] for line in problems] == [
        "config.providers.vault.class", "config.providers.file.class"]
    assert "FileConfigProvider" in problems[0] and "EnvVarConfigProvider" in problems[0]


def test_allowed_paths_must_be_absolute_and_exist_as_kafka_requires(tmp_path):
    entries = {"config.providers": "file, dir", "config.providers.file.class": FILE,
               "config.providers.file.param.allowed.paths": "secrets",
               "config.providers.dir.class": DIRECTORY,
               "config.providers.dir.param.allowed.paths": f"{tmp_path},{tmp_path / 'missing'}"}
    _, problems = ConfigProviders.from_entries(entries, {})
    assert [line.split(": ", 1)[0] for line in problems] == [
        "config.providers.file.param.allowed.paths", "config.providers.dir.param.allowed.paths"]
    assert "not absolute" in problems[0] and "does not exist" in problems[1]


def test_env_allowlist_pattern_runs_on_re2_and_a_backtracking_one_is_refused():
    """allowlist.pattern comes from the MM2 file like every other user regex: linear time, or refused by name."""
    look_around = {"config.providers": "env", "config.providers.env.class": ENV,
                   "config.providers.env.param.allowlist.pattern": "(?!SECRET).*"}
    _unused, problems = ConfigProviders.from_entries(look_around, {})
    assert len(problems) == 1
    assert problems[0].startswith("config.providers.env.param.allowlist.pattern: ")
    assert "RE2" in problems[0] and "look-around" in problems[0]
    nested = {"config.providers": "env", "config.providers.env.class": ENV,
              "config.providers.env.param.allowlist.pattern": "(A+)+B"}
    providers = _providers(nested, {"A" * 40 + "C": "x", "AAB": SECRET})
    assert providers.resolve("k", "${env:AAB}") == SECRET
    with pytest.raises(ConfigProviderError, match="does not match"):
        providers.resolve("k", "${env:" + "A" * 40 + "C}")  # Python's re backtracks here for hours
