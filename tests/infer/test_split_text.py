"""How a text is cut into pieces (`f5lite.infer.chunking.split_text`): a short first piece for streams."""

from __future__ import annotations

from f5lite.infer.chunking import chunk_text, split_text

TEXT = "Well, the kettle started to whistle, just as the phone rang. Please leave your boots by the door."


def test_a_stream_starts_with_a_short_piece_cut_at_a_clause_or_between_words() -> None:
    pieces = split_text(TEXT, 200, 40)
    assert pieces[0] == "Well, the kettle started to whistle,"  # at the clause mark nearest the budget
    assert len(pieces[0].encode()) <= 40
    assert " ".join(pieces) == TEXT  # nothing lost, nothing repeated
    words = split_text("abcdefgh " * 10, 200, 20)
    assert words[0] == "abcdefgh abcdefgh" and " ".join(words) == ("abcdefgh " * 10).strip()
    chinese = "今天天气很好，我们去公园散步吧。明天再说。"
    first, *rest = split_text(chinese, 200, 21)
    assert first == "今天天气很好，" and first + "".join(rest) == chinese  # CJK: cut after the mark, no space
    first, *rest = split_text(chinese, 200, 20)  # the clause is one byte over: cut between characters
    assert first == "今天天气很好" and first + "".join(rest) == chinese


def test_a_whole_response_is_cut_as_f5lite_infer_cuts_it() -> None:
    assert split_text(TEXT, 200, None) == chunk_text(TEXT, 200) == [TEXT]
    assert split_text(TEXT, 60, None) == chunk_text(TEXT, 60)
    assert split_text("Hi there.", 200, 40) == ["Hi there."]  # short already
