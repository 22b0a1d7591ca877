"""Image parts: OpenAI's documented tile and patch formulas, per model family, and the sizes a
file does not give (the largest the formula allows)."""

from __future__ import annotations

import pytest

from convmem import ImageRef, count_prompt, make_counter
from convmem.tokens import IMAGE_RULES, ImageRule, image_rule_for_model

TILE = ImageRule.tile(85, 170)


@pytest.mark.parametrize(
    ("w", "h", "detail", "expected"),
    [
        (1024, 1024, "high", 765),  # OpenAI's example: 768x768, 4 tiles
        (2048, 4096, "high", 1105),  # OpenAI's example: 1024x2048 -> 768x1536, 6 tiles
        (4096, 8192, "low", 85),  # OpenAI's example: low is the base, whatever the size
        (1024, 1024, "auto", 765),  # auto is counted as high
        (512, 512, "high", 255),  # one tile, never scaled up
        (100, 100, "high", 255),
        (513, 100, "high", 425),  # two tiles wide
        (2049, 513, "high", 1445),  # -> 2048x513 (512.75 rounds up): 4x2 tiles
        (2050, 513, "high", 765),  # -> 2048x512 (512.5 rounds to even): 4x1 tiles
    ],
)
def test_tile_formula(w, h, detail, expected):
    assert TILE.tokens(ImageRef(w, h, detail)) == expected


def test_unknown_size_is_the_largest_the_formula_gives():
    assert TILE.tokens(ImageRef()) == 85 + 8 * 170 == 1445
    assert TILE.tokens(ImageRef(None, None, "low")) == 85
    assert TILE.tokens(ImageRef(1000, None)) == 1445
    # brute force over a grid of sizes: nothing exceeds the unknown-size count
    sizes = [1, 300, 511, 512, 513, 767, 768, 769, 1024, 1536, 2047, 2048, 2049, 4096, 9000]
    assert max(TILE.tokens(ImageRef(w, h)) for w in sizes for h in sizes) == 1445
    patch = ImageRule.patch(1.62)
    assert max(patch.tokens(ImageRef(w, h)) for w in sizes for h in sizes) <= patch.tokens(ImageRef())


@pytest.mark.parametrize(
    ("multiplier", "w", "h", "expected"),
    [
        (1.0, 1024, 1024, 1024),  # 32x32 patches
        (1.0, 1800, 2400, 1452),  # over 1536: scaled to 33x44 patches (OpenAI's example)
        (1.62, 1024, 1024, 1659),
        (1.62, 1800, 2400, 2352),
        (2.46, 64, 64, 10),  # 4 patches x 2.46 = 9.84
    ],
)
def test_patch_formula(multiplier, w, h, expected):
    rule = ImageRule.patch(multiplier)
    assert rule.tokens(ImageRef(w, h)) == expected
    assert rule.tokens(ImageRef(w, h, "low")) == expected  # detail does not change patch costs


def test_anthropic_and_gemini_rules():
    area = ImageRule.area()
    assert area.tokens(ImageRef(1000, 1000)) == 1333  # 10^6 / 750
    assert area.tokens(ImageRef(2000, 1000)) == 1600  # 1568x784 -> 1639, capped
    assert area.tokens(ImageRef(200, 200)) == 53
    assert area.tokens(ImageRef()) == 1600
    gem = ImageRule.gemini()
    assert gem.tokens(ImageRef(384, 384)) == 258
    assert gem.tokens(ImageRef(1000, 800)) == 4 * 258
    assert gem.tokens(ImageRef()) == 258


def test_rules_per_model():
    assert image_rule_for_model(None) == TILE
    assert image_rule_for_model("gpt-4o") == TILE
    assert image_rule_for_model("gpt-4.1") == TILE
    assert image_rule_for_model("gpt-4o-mini-2024-07-18") == ImageRule.tile(2833, 5667)
    assert image_rule_for_model("o1") == image_rule_for_model("o3") == ImageRule.tile(75, 150)
    assert image_rule_for_model("o4-mini") == ImageRule.patch(1.72)
    assert image_rule_for_model("gpt-4.1-mini") == ImageRule.patch(1.62)
    assert image_rule_for_model("gpt-5-nano") == ImageRule.patch(2.46)
    assert image_rule_for_model("claude-sonnet-4") == ImageRule.area()
    assert image_rule_for_model("gemini-2.0-flash") == ImageRule.gemini()
    assert set(IMAGE_RULES) >= {"gpt-4o-mini", "o1", "o3", "o4-mini", "claude", "gemini"}
    assert make_counter("gpt-4o-mini").count_message(
        "user", None, images=[ImageRef(10, 10, "low")]) == 3 + 1 + 2833


def test_images_in_messages_and_prompts():
    c = make_counter("gpt-4o")
    imgs = [ImageRef(1024, 1024, "high"), ImageRef(None, None, "low")]
    assert c.count_message("user", "What is this?", images=imgs) == (
        3 + 1 + c.count_text("What is this?") + 765 + 85)
    assert make_counter(per_message_overhead=0).count_message("user", None, images=imgs) == 850
    msg = {"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "https://x/z.png"}},  # unknown size, auto
    ]}
    assert count_prompt([msg], "gpt-4o") == 3 + 1 + c.count_text("What is this?") + 85 + 1445 + 3


def test_imageref_validation():
    with pytest.raises(ValueError, match="ImageRef.detail"):
        ImageRef(1, 1, "medium")
    with pytest.raises(ValueError, match="ImageRef.width must be positive"):
        ImageRef(0, 1)
    with pytest.raises(TypeError, match="ImageRef.height must be an int"):
        ImageRef(1, 2.5)
    with pytest.raises(TypeError, match="must be an ImageRef"):
        TILE.tokens((1, 1))
    ref = ImageRef(3, 4)
    with pytest.raises(AttributeError):
        ref.width = 5  # frozen
    assert not hasattr(ref, "__dict__")  # slotted
