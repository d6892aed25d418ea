import pytest

from wattsched.dataset.hostlist import expand_hostlist


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("r256n01", ("r256n01",)),
        ("r256n[01-03,07],login1", ("r256n01", "r256n02", "r256n03", "r256n07", "login1")),
        ("c[1-2]-g[9-10]", ("c1-g9", "c1-g10", "c2-g9", "c2-g10")),
        ("n[008-010]", ("n008", "n009", "n010")),
        ("a,b , c", ("a", "b", "c")),
    ],
)
def test_expand(text, names) -> None:
    assert expand_hostlist(text) == names


@pytest.mark.parametrize("text", ["n[1-", "n]1[", "n[3-1]", "n[1-2]x]", "n[a-b]"])
def test_malformed(text) -> None:
    with pytest.raises(ValueError, match="hostlist"):
        expand_hostlist(text)
