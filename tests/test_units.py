import pytest

from gemmsim.units import format_bytes, parse_bytes


@pytest.mark.parametrize("text,value", [("32KiB", 32768), ("8MiB", 8 << 20), ("1GiB", 1 << 30), ("38.5MiB", 40370176), (" 64 ", 64), ("128B", 128), (4096, 4096)])
def test_binary_sizes(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text", ["32K", "32KB", "32kB", "1MB", "1.5B", "-3", "big", True, 3.5])
def test_decimal_and_malformed_sizes_are_refused(text):
    with pytest.raises(ValueError):
        parse_bytes(text)


def test_format_bytes():
    assert format_bytes(32768) == "32 KiB"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(12) == "12 B"
