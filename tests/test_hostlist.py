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


@pytest.mark.parametrize(
    "text",
    [
        "n[0-999999999]",  # was a MemoryError
        "x[0-9999]y[0-9999]",  # a product of two ranges
        ",".join(f"a{i}[0-99999]" for i in range(30)),  # many parts, each within python-hostlist's own bound
        "n[" + ",".join("0-99999" for _ in range(50)) + "]",
    ],
)
def test_a_huge_hostlist_is_refused_before_expanding(text) -> None:
    with pytest.raises(ValueError, match="over the limit of 100,000"):
        expand_hostlist(text)


def test_the_node_limit_is_a_parameter_and_the_text_is_bounded() -> None:
    assert len(expand_hostlist("n[1-980]")) == 980
    with pytest.raises(ValueError, match="over the limit of 100"):
        expand_hostlist("n[1-980]", max_nodes=100)
    with pytest.raises(ValueError, match="characters is over the limit"):
        expand_hostlist("a," * 40_000)


def test_the_bound_never_undercounts() -> None:
    from wattsched.dataset.hostlist import count_upper_bound

    for text in ["r256n[01-03,07],login1", "c[1-2]-g[9-10]", "a,b,c", "n[1-4,6,8-9]x[1-2],m", "n1"]:
        assert count_upper_bound(text) >= len(expand_hostlist(text))
