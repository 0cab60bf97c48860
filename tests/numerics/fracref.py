"""Exact rational helpers for the numerics tests: round a Fraction to a binary format (independent of gemmsim)."""

from fractions import Fraction
import math


def round_fraction(x: Fraction, p: int, emin: int, maxv: float) -> float:
    """x rounded to nearest, ties to even, in a format with p significant bits and smallest normal 2^emin."""
    if x == 0:
        return 0.0
    sign = -1 if x < 0 else 1
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    E = max(e, emin)
    q = Fraction(2) ** (E - p + 1)
    n = x / q
    fl = n.numerator // n.denominator
    rem = n - fl
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2 == 1):
        fl += 1
    r = fl * q
    if r > Fraction(maxv):
        return sign * math.inf
    return sign * float(r)
