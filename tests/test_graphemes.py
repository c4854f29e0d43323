"""Title cuts between whole grapheme clusters (structbench.graphemes)."""

import regex

from structbench.graphemes import bounded_title, grapheme_boundary_before

THAI = "รถไฟฟ้าสายใหม่เปิดให้บริการแล้ววันนี้ผู้โดยสารจำนวนมากเดินทางไปทำงานด้วยรถไฟฟ้า"
HINDI = "नई मेट्रो लाइन आज से यात्रियों के लिए खुल गई है और बहुत से लोग काम पर जा रहे हैं"


def clusters(text: str) -> list[str]:
    return regex.findall(r"\X", text)


def test_a_bounded_title_keeps_whole_clusters_and_prefers_a_word_boundary():
    for text in (THAI, HINDI):
        title = bounded_title(text, 30)
        kept = title.removesuffix("…")
        assert title.endswith("…") and len(title) <= 30
        assert clusters(kept) == clusters(text)[: len(clusters(kept))]  # every mark with its letter
    assert bounded_title(HINDI, 30).removesuffix("…") in HINDI.split(" खुल")[0]  # cut at a space
    assert bounded_title("Short title", 60) == "Short title"


def test_a_token_offset_inside_a_cluster_moves_back_to_its_start():
    text = "ใหม่"  # ใ ห ม่: the tone mark ่ is written on ม
    assert grapheme_boundary_before(text, 3) == 2 and grapheme_boundary_before(text, 4) == 4
