"""A node's ``.properties`` file as it is loaded: the file read as ``java.util.Properties.load``
reads it (the syntax is :mod:`rackwise.formats.properties`'s), the ``--override KEY=VALUE``
settings of ``kafka-server-start.sh`` set over it, and :class:`ConfigException`, the error every
key check of a node raises (:mod:`rackwise.node.config` holds the keys each role accepts).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from rackwise.common.config_values import invalid_value
from rackwise.common.errors import InvalidFormatException, RackwiseError
from rackwise.formats.properties import parse_properties


class ConfigException(RackwiseError, ValueError):
    """Kafka's ``ConfigException``: an unknown key, a missing one, or an invalid value; the
    message names the key."""

    error_code = 40  # INVALID_CONFIG


def invalid_config(key: str, value: str, reason: str) -> ConfigException:
    """The :class:`ConfigException` refusing ``value`` for ``key``, in Kafka's words."""
    return ConfigException(invalid_value(key, value, reason))


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """The properties of the file at ``path`` (UTF-8, as Java 9+ reads them); a malformed file
    raises :class:`ConfigException` naming it."""
    try:
        return parse_properties(Path(path).read_text(encoding="utf-8"))
    except InvalidFormatException as e:
        raise ConfigException(f"{path}: {e}") from None


# ---- --override KEY=VALUE (kafka-server-start.sh) ------------------------------------------


def parse_overrides(
    values: Sequence[str | None], non_options: Sequence[str] = ()
) -> dict[str, str]:
    """The settings of repeated ``--override KEY=VALUE`` arguments, as Kafka's
    ``Kafka.getPropsFromArgs`` reads them: a ``--override`` without its argument (None here)
    and any argument that is not an option are refused with Kafka's messages; the value is
    everything after the first ``=`` (it may hold more), ``KEY`` alone sets an empty value, and
    a later setting of a key wins. Unlike Kafka, an empty key is refused (Kafka ignores it)."""
    texts = [value for value in values if value is not None]
    if len(texts) != len(values):
        raise ConfigException("Option override requires an argument")
    if non_options:
        raise ConfigException(f"Found non argument parameters: {','.join(non_options)}")
    overrides: dict[str, str] = {}
    for text in texts:
        key, _, value = text.partition("=")
        if not key:
            raise ConfigException(f"Invalid override {text}: the key before '=' is empty")
        overrides[key] = value
    return overrides


def apply_overrides(props: Mapping[str, str], overrides: Mapping[str, str]) -> dict[str, str]:
    """``props`` with ``overrides`` set over them (an override wins, as in Kafka)."""
    return {**props, **overrides}
