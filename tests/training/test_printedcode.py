"""The printed plans' constants (symcomm.training.printedcode.Constants): one parameter per distinct constant."""

from symcomm.training.printedcode import Constants


def test_equal_words_tuples_and_mappings_are_one_parameter_and_anything_else_is_kept_apart():
    k = Constants()
    # equal by value (words, ints, None, in tuples and mappings): one parameter, the first object kept
    first = {"label": "tp all-reduce", "group": 0, "dtype": None}
    assert k(first) == k(dict(first)) == "_k0"
    assert k(("a", 1)) == k(("a", 1)) == "_k1"
    assert k.values[0] is first
    # apart: a truth value and the int it equals, 0.0 and -0.0 (equal, yet shown differently), a float by identity,
    # two mappings of the same items in another order (a document's keys keep their order), a list by identity
    assert k(True) != k(1)
    assert k((0.0,)) != k((-0.0,))
    assert k({"a": 1, "b": 2}) != k({"b": 2, "a": 1})
    listed = ["a"]
    assert k(listed) != k(["a"]) and k(listed) == k(listed)
    assert k.values[int(k(True)[2:])] is True and k.values[int(k(1)[2:])] == 1
