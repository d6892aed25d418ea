"""populated_empty: a writable array of the asked size and dtype, whichever way it is allocated."""

import numpy as np
import pytest

from wattsched.core import memory as _memory
from wattsched.core.memory import populated_empty


@pytest.mark.parametrize("n", [0, 10, (_memory.POPULATE_MIN_BYTES // 8) + 3])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_populated_empty_is_a_writable_array(n, dtype) -> None:
    a = populated_empty(n, dtype)
    assert a.shape == (n,) and a.dtype == np.dtype(dtype) and a.flags.writeable
    a[:] = 7
    assert int(a.sum()) == 7 * n
