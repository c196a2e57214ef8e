"""Arrow columns as NumPy arrays, for the in-process engine's vectorised checks and audit.

A string column of millions of rows holds few distinct values (cluster ids, topics, paths):
it is dictionary-encoded once (Arrow's C++ hashing) and worked on as integer codes, each check
run on the few distinct values and spread back by indexing, never by making a Python string
per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

NULL_CODE: Final = -1
"""The code of a null in :class:`Encoded` (codes of values start at 0)."""


@dataclass(frozen=True)
class Encoded:
    """A column as ``codes`` (int64, :data:`NULL_CODE` for null) into its distinct ``values``."""

    codes: np.ndarray
    values: pa.Array

    @classmethod
    def of(cls, column: pa.ChunkedArray | pa.Array) -> Encoded:
        array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if not pa.types.is_dictionary(array.type):
            array = pc.dictionary_encode(array)
        return cls(filled(array.indices, NULL_CODE), array.dictionary)

    def spread(self, per_value: np.ndarray, null: object) -> np.ndarray:
        """``per_value[code]`` for every row, ``null`` where the row is null."""
        if per_value.size == 0:
            return np.full(self.codes.size, null, dtype=per_value.dtype)
        out: np.ndarray = per_value[np.maximum(self.codes, 0)]
        out[self.codes == NULL_CODE] = null
        return out

    def index_in(self, value_set: pa.Array) -> np.ndarray:
        """Each row's position in ``value_set`` (:data:`NULL_CODE` when absent or null)."""
        positions = filled(pc.index_in(self.values, value_set=value_set), NULL_CODE)
        return self.spread(positions, NULL_CODE)


def filled(column: pa.ChunkedArray | pa.Array, fill: int) -> np.ndarray:
    """An integer column as int64, nulls as ``fill``."""
    return np.asarray(pc.fill_null(column, fill).to_numpy(zero_copy_only=False), np.int64)


def valid(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Where ``column`` is not null."""
    return np.asarray(pc.is_valid(column).to_numpy(zero_copy_only=False), np.bool_)


def flags(column: pa.ChunkedArray | pa.Array, null: bool) -> np.ndarray:
    """A boolean column as a NumPy bool array, nulls as ``null``."""
    return np.asarray(pc.fill_null(column, null).to_numpy(zero_copy_only=False), np.bool_)


def member(sorted_values: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``values`` is in ``sorted_values`` and whether it is there."""
    if sorted_values.size == 0:
        return np.zeros(values.size, np.int64), np.zeros(values.size, np.bool_)
    at = np.minimum(np.searchsorted(sorted_values, values), sorted_values.size - 1)
    return at, sorted_values[at] == values


def group_ids(*codes: np.ndarray) -> np.ndarray:
    """A number per distinct combination of the (non-negative) ``codes``, in order of first
    row: the codes are combined into one int64 (renumbered first where the product would not
    fit) and numbered by hashing."""
    import pandas as pd  # noqa: PLC0415

    key = codes[0].astype(np.int64)
    for more in codes[1:]:
        width = int(more.max(initial=0)) + 1
        if int(key.max(initial=0)) >= (2**62) // width:
            key = np.asarray(pd.factorize(key)[0], np.int64)
        key = key * width + more
    return np.asarray(pd.factorize(key)[0], np.int64)
