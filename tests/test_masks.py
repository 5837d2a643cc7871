
import numpy as np
import pytest

from netcl_lite.masks import causal, combine, cross, encoder, render, teacher_forcing

SOURCE_VALID = np.array([True, True, True, True, False, False])


def test_sheet_visibility_counts():
    assert encoder(6).shape == (6, 6) and encoder(6).sum() == 36
    assert causal(4).shape == (4, 4) and causal(4).sum() == 10
    padded = cross(4, SOURCE_VALID)
    assert padded.shape == (4, 6) and padded.sum() == 16
    assert not padded[:, 4:].any()


def test_causal_is_lower_triangular():
    mask = causal(4)
    assert all(mask[i, j] == (j <= i) for i in range(4) for j in range(4))
    assert mask.dtype == bool


@pytest.mark.parametrize("query_len, key_len", [(1, 5), (2, 5), (3, 3), (4, 7), (0, 3)])
def test_rectangular_causal_queries_are_the_last_positions(query_len, key_len):
    mask = causal(query_len, key_len)
    full = causal(key_len)
    np.testing.assert_array_equal(mask, full[key_len - query_len:])  # the last rows of the square mask
    if query_len:
        assert mask[-1].all()  # the newest query sees every key, itself included


def test_encoder_with_padding_blocks_padding_rows_and_columns():
    mask = encoder(SOURCE_VALID)
    assert mask.sum() == 16
    assert not mask[4:].any() and not mask[:, 4:].any()
    np.testing.assert_array_equal(encoder(4), encoder([True] * 4))


def test_cross_with_target_and_source_padding():
    target_valid = [True, True, True, False]
    mask = cross(target_valid, SOURCE_VALID)
    assert mask.sum() == 3 * 4 and not mask[3].any()


def test_combine_causal_with_target_padding():
    target_valid = np.array([True, True, True, False])
    mask = combine(causal(4), encoder(target_valid))
    np.testing.assert_array_equal(mask, causal(4) & encoder(target_valid))
    assert mask.sum() == 6  # the 3 x 3 causal block of the real tokens
    np.testing.assert_array_equal(combine(causal(3)), causal(3))


def test_render_exact():
    assert render(cross(2, [True, True, False])) == "# # .\n# # ."
    assert render(causal(3)) == "# . .\n# # .\n# # #"
    assert render(np.zeros((0, 0), dtype=bool)) == ""


def test_teacher_forcing_shift():
    inputs, targets = teacher_forcing(["BOS", "a", "b", "c", "EOS"])
    assert inputs == ["BOS", "a", "b", "c"]
    assert targets == ["a", "b", "c", "EOS"]
    batch = np.array([[1, 2, 3], [4, 5, 6]])
    batch_inputs, batch_targets = teacher_forcing(batch)
    np.testing.assert_array_equal(batch_inputs, [[1, 2], [4, 5]])
    np.testing.assert_array_equal(batch_targets, [[2, 3], [5, 6]])


def test_teacher_forcing_no_position_sees_its_target():
    tokens = list(range(10, 16))
    inputs, targets = teacher_forcing(tokens)
    visible = causal(len(inputs))
    for i, target in enumerate(targets):
        seen = [inputs[j] for j in range(len(inputs)) if visible[i, j]]
        assert seen == tokens[: i + 1] and target == tokens[i + 1] and target not in seen


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: encoder(-1), ValueError, "valid must be >= 0"),
        (lambda: encoder([1, 1, 0]), TypeError, "valid must be an int length or booleans"),
        (lambda: encoder([[True]]), ValueError, "valid must be an int length or 1-D"),
        (lambda: encoder(True), ValueError, "valid must be an int length or 1-D"),
        (lambda: encoder(2.0), TypeError, "valid must be an int length or booleans"),
        (lambda: causal(-2), ValueError, "query_len must be >= 0"),
        (lambda: causal(3, -1), ValueError, "key_len must be >= 0"),
        (lambda: causal(3.0), TypeError, "query_len must be an int"),
        (lambda: causal(True), TypeError, "query_len must be an int"),
        (lambda: causal(4, 2), ValueError, "query_len 4 > key_len 2"),
        (lambda: cross(-4, 6), ValueError, "target_valid must be >= 0"),
        (lambda: cross(4, [1, 1, 0]), TypeError, "source_valid must be an int length or booleans"),
        (lambda: combine(), ValueError, "at least one mask"),
        (lambda: combine(causal(4), cross(4, 6)), ValueError, r"masks\[1\] has \(4, 6\)"),
        (lambda: combine(causal(2), np.ones((2, 2))), TypeError, r"masks\[1\] must be a bool array"),
        (lambda: render(np.ones(3, dtype=bool)), ValueError, r"mask must be 2-D"),
        (lambda: render([[1, 0]]), TypeError, "mask must be a bool array"),
        (lambda: teacher_forcing(["BOS"]), ValueError, "tokens needs at least 2 items"),
        (lambda: teacher_forcing(np.array([[1], [2]])), ValueError, "tokens must have at least 2 positions"),
        (lambda: teacher_forcing(np.array(3)), ValueError, "tokens must have at least 2 positions"),
        (lambda: teacher_forcing({1, 2, 3}), TypeError, "tokens must be a sequence"),
    ],
)
def test_bad_input_is_rejected(call, error, match):
    with pytest.raises(error, match=match):
        call()
