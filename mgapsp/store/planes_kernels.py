"""The compiled halves of :mod:`mgapsp.store.planes`: one chunk encoded or decoded.

The format is described in :mod:`mgapsp.store.planes`; ``kernels/planes.cu`` encodes
it on the GPU by the same rules, so that both make the same bytes.  Words are handled
as ``uint64`` whatever their size (``bits`` 32 or 64), masked to their width after
every subtraction.
"""

from __future__ import annotations

import numpy as np

from ..jit import jit

LANES = 64
HEADER = 32
VERSION = 2
#: descriptor modes: offset, offset except special, 2-6 the row 1-5 above, 7 a row
#: further above (its distance in rows, a uint32, first in the payload)
OFFSET, MASKED, ABOVE, FAR = 0, 1, 2, 7
NEAR_ROWS = FAR - ABOVE
#: how many rows above the encoders try, nearest first (the GPU's too: same bytes)
SEARCH_ROWS = 16
_ONE = np.uint64(1)


@jit()
def _bit_length(v):
    n = 0
    while v:
        v >>= _ONE
        n += 1
    return n


@jit()
def _trailing_zeros(v):
    if v == 0:
        return 0
    n = 0
    while (v & _ONE) == 0:
        v >>= _ONE
        n += 1
    return n


@jit()
def _signed(d, bits):
    """The ``bits``-wide word ``d`` as a signed integer."""
    if bits == 32:
        v = np.int64(d)
        return v - (np.int64(1) << np.int64(32)) if v >= (np.int64(1) << np.int64(31)) else v
    return np.int64(d)      # wraps: the two's complement reading


@jit()
def _zigzag(sd, bits, mask):
    return np.uint64((sd << np.int64(1)) ^ (sd >> np.int64(63))) & mask


@jit()
def _offset(x, cnt, masked, special, mask):
    """The offset modes' ``(base, shift, width)``: every word above the block's smallest
    (``masked``: the special words left out, their residuals 0)."""
    have = False
    base = np.uint64(0)
    for i in range(cnt):
        if not (masked and x[i] == special) and (not have or x[i] < base):
            base = x[i]
            have = True
    acc = np.uint64(0)
    for i in range(cnt):
        if not (masked and x[i] == special):
            acc |= (x[i] - base) & mask
    s = _trailing_zeros(acc)
    return base, s, _bit_length(acc >> np.uint64(s))


@jit()
def _rows_above(words, lo, cnt, ref, bits, mask):
    """The shift and width of a block's differences from the words ``ref`` earlier: one
    pass, as ``zigzag(d >> s) == zigzag(d) >> s`` when ``s`` trailing bits of ``d`` are 0."""
    acc = np.uint64(0)
    zz = np.uint64(0)
    if bits == 32:
        for i in range(cnt):
            # the 32-bit difference as a signed integer, by integer arithmetic alone
            d = (np.int64(words[lo + i]) - np.int64(words[lo + i - ref]) + 0x80000000) \
                & 0xFFFFFFFF
            d -= 0x80000000
            acc |= np.uint64(d & 0xFFFFFFFF)
            zz |= np.uint64((d << 1) ^ (d >> 63))
    else:
        for i in range(cnt):
            d = (words[lo + i] - words[lo + i - ref]) & mask
            acc |= d
            zz |= _zigzag(_signed(d, bits), bits, mask)
    s = _trailing_zeros(acc)
    return s, _bit_length(zz >> np.uint64(s))


@jit(nogil=True)
def encode_words(words, C, bits, special, out):
    """Encode ``words`` (unsigned, ``bits`` wide) with rows of ``C`` into
    ``out`` (uint8, at least :func:`mgapsp.store.planes.bound` bytes); returns the
    frame's length."""
    n = len(words)
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if bits == 64 else np.uint64(0xFFFFFFFF)
    nb = (n + LANES - 1) // LANES
    desc_bytes = (2 * nb + 3) // 4 * 4
    head = out[:HEADER]
    head[:] = 0
    head[0] = 77     # "MGPL"
    head[1] = 71
    head[2] = 80
    head[3] = 76
    head[4] = VERSION
    head[5] = bits // 8
    out[8:16].view(np.uint64)[0] = np.uint64(n)
    out[16:24].view(np.uint64)[0] = np.uint64(C)
    out[24:32].view(np.uint64)[0] = special
    desc = out[HEADER:HEADER + desc_bytes].view(np.uint16)
    desc[:] = 0
    op = HEADER + desc_bytes
    W = bits // 8
    res = np.zeros(LANES, dtype=np.uint64)
    x = np.zeros(LANES, dtype=np.uint64)
    for b in range(nb):
        lo = b * LANES
        cnt = min(LANES, n - lo)
        for i in range(cnt):
            x[i] = np.uint64(words[lo + i])
        base, s, w = _offset(x, cnt, False, special, mask)
        mode, rows, best = OFFSET, 0, W + 8 * w
        mbase, ms, mw = _offset(x, cnt, True, special, mask)
        if 8 + W + 8 * mw < best:
            mode, best, base, s, w = MASKED, 8 + W + 8 * mw, mbase, ms, mw
        if C >= LANES:
            for k in range(1, min(SEARCH_ROWS, lo // C) + 1):
                ks, kw = _rows_above(words, lo, cnt, k * C, bits, mask)
                size = 8 * kw + (4 if k > NEAR_ROWS else 0)
                if size < best:
                    mode, rows, best, s, w = ABOVE, k, size, ks, kw
        code = mode if mode != ABOVE else (ABOVE - 1 + rows if rows <= NEAR_ROWS else FAR)
        desc[b] = np.uint16(w | (s << 7) | (code << 13))
        for i in range(LANES):
            r = np.uint64(0)
            if i < cnt:
                if mode == ABOVE:
                    sd = _signed((x[i] - np.uint64(words[lo + i - rows * C])) & mask, bits)
                    r = _zigzag(sd >> np.int64(s), bits, mask)
                elif not (mode == MASKED and x[i] == special):
                    r = ((x[i] - base) & mask) >> np.uint64(s)
            res[i] = r
        if mode == MASKED:
            m = np.uint64(0)
            for i in range(cnt):
                if x[i] == special:
                    m |= _ONE << np.uint64(i)
            out[op:op + 8].view(np.uint64)[0] = m
            op += 8
        if mode != ABOVE:
            if bits == 32:
                out[op:op + 4].view(np.uint32)[0] = np.uint32(base)
            else:
                out[op:op + 8].view(np.uint64)[0] = base
            op += W
        elif code == FAR:
            out[op:op + 4].view(np.uint32)[0] = np.uint32(rows)
            op += 4
        for k in range(w):
            plane = np.uint64(0)
            for i in range(LANES):
                plane |= ((res[i] >> np.uint64(k)) & _ONE) << np.uint64(i)
            out[op:op + 8].view(np.uint64)[0] = plane
            op += 8
    return op


@jit(nogil=True)
def _layout(frame, n):
    """Where each block's payload starts, and its distance in rows for the modes above
    (0 for the others), read from the descriptors alone: ``(starts, rows, end)``, with
    ``end`` the bytes read, -1 where the frame is shorter than its descriptors say."""
    bits = np.int64(frame[5]) * 8
    C = np.int64(frame[16:24].view(np.uint64)[0])
    nb = (n + LANES - 1) // LANES
    starts = np.empty(nb, dtype=np.int64)
    above = np.zeros(nb, dtype=np.int64)
    desc_bytes = (2 * nb + 3) // 4 * 4
    if len(frame) < HEADER + desc_bytes:
        return starts, above, -1
    desc = frame[HEADER:HEADER + desc_bytes].view(np.uint16)
    op = HEADER + desc_bytes
    for b in range(nb):
        d = np.int64(desc[b])
        w, mode = d & 127, (d >> 13) & 7
        starts[b] = op
        if mode >= ABOVE:
            rows = mode - ABOVE + 1
            if mode == FAR:
                if op + 4 > len(frame):
                    return starts, above, -1
                rows = np.int64(frame[op:op + 4].view(np.uint32)[0])
                op += 4
            if C < LANES or rows < 1 or b * LANES < rows * C:
                return starts, above, -1
            above[b] = rows
        op += 8 * w + (0 if mode >= ABOVE else bits // 8) + (8 if mode == MASKED else 0)
        if op > len(frame) or w > bits:
            return starts, above, -1
    return starts, above, op


@jit(nogil=True)
def _decode_block(frame, b, op, rows, words):
    """Block ``b``'s words, its payload at ``op`` (checked by :func:`_layout`); the
    words it refers to (``rows`` rows above) decoded before."""
    n = len(words)
    bits = np.int64(frame[5]) * 8
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if bits == 64 else np.uint64(0xFFFFFFFF)
    C = np.int64(frame[16:24].view(np.uint64)[0])
    special = frame[24:32].view(np.uint64)[0]
    d = np.int64(frame[HEADER + 2 * b:HEADER + 2 * b + 2].view(np.uint16)[0])
    w, s, mode = d & 127, (d >> 7) & 63, (d >> 13) & 7
    lo = b * LANES
    if mode == FAR:
        op += 4
    m = np.uint64(0)
    if mode == MASKED:
        m = frame[op:op + 8].view(np.uint64)[0]
        op += 8
    base = np.uint64(0)
    if mode < ABOVE:
        if bits == 32:
            base = np.uint64(frame[op:op + 4].view(np.uint32)[0])
        else:
            base = frame[op:op + 8].view(np.uint64)[0]
        op += bits // 8
    planes = frame[op:op + 8 * w].view(np.uint64)
    ref = rows * C
    for i in range(min(LANES, n - lo)):
        r = np.uint64(0)
        for k in range(w):
            r |= ((planes[k] >> np.uint64(i)) & _ONE) << np.uint64(k)
        if mode >= ABOVE:
            sd = np.int64(r >> _ONE) ^ -np.int64(r & _ONE)
            words[lo + i] = (np.uint64(words[lo + i - ref])
                             + (np.uint64(sd << np.int64(s)) & mask)) & mask
        elif mode == MASKED and (m >> np.uint64(i)) & _ONE:
            words[lo + i] = special
        else:
            words[lo + i] = (base + (r << np.uint64(s))) & mask


@jit(nogil=True)
def decode_words(frame, words):
    """Decode ``frame`` (uint8) into ``words`` (unsigned, the header's count and width); returns
    the bytes read, or -1 where the frame is shorter than its descriptors say."""
    starts, above, end = _layout(frame, len(words))
    if end < 0:
        return -1
    for b in range(len(starts)):
        _decode_block(frame, b, starts[b], above[b], words)
    return end


@jit(nogil=True)
def decode_rows(frame, words, rows):
    """Decode into ``words`` (the chunk's every word) the words of the chunk's rows
    ``rows`` (ascending) and those they are computed from, and no others: a block of
    the modes above needs its words' rows above, and so on up.  Returns the blocks
    decoded, or -1 for a damaged frame."""
    n = len(words)
    C = np.int64(frame[16:24].view(np.uint64)[0])
    starts, above, end = _layout(frame, n)
    if end < 0:
        return -1
    nb = len(starts)
    need = np.zeros(nb, dtype=np.bool_)
    for r in rows:
        lo, hi = min(r * C, n), min((r + 1) * C, n)
        if hi > lo:
            need[lo // LANES:(hi - 1) // LANES + 1] = True
    # a block refers only to words before its own: one pass from the last block marks
    # every block that a needed one is computed from
    for b in range(nb - 1, -1, -1):
        if need[b] and above[b]:
            lo = b * LANES - above[b] * C
            need[lo // LANES] = True
            need[(lo + min(LANES, n - b * LANES) - 1) // LANES] = True
    count = 0
    for b in range(nb):
        if need[b]:
            _decode_block(frame, b, starts[b], above[b], words)
            count += 1
    return count
