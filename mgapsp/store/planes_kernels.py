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
FOR, MASKED, ABOVE = 0, 1, 2
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
def _block_modes(x, y, cnt, above, bits, mask, special, res):
    """Residuals of a block of ``cnt`` words ``x`` (uint64; ``y`` the words a row
    above, where ``above``) under each mode: ``res[mode, lane]``, shifted; per mode
    ``(bytes, base, shift, width)``, the bytes -1 where the mode does not apply."""
    out = np.zeros((3, 4), dtype=np.int64)
    bases = np.zeros(3, dtype=np.uint64)
    # offset: every word above the block's smallest
    base = x[0]
    for i in range(cnt):
        if x[i] < base:
            base = x[i]
    acc = np.uint64(0)
    for i in range(cnt):
        acc |= (x[i] - base) & mask
    s = _trailing_zeros(acc)
    acc = np.uint64(0)
    for i in range(LANES):
        r = ((x[i] - base) & mask) >> np.uint64(s) if i < cnt else np.uint64(0)
        res[FOR, i] = r
        acc |= r
    w = _bit_length(acc)
    out[FOR, 0], out[FOR, 2], out[FOR, 3] = bits // 8 + 8 * w, s, w
    bases[FOR] = base
    # offset except special: the special words aside, the others above their smallest
    have = False
    base = np.uint64(0)
    for i in range(cnt):
        if x[i] != special and (not have or x[i] < base):
            base = x[i]
            have = True
    acc = np.uint64(0)
    for i in range(cnt):
        if x[i] != special:
            acc |= (x[i] - base) & mask
    s = _trailing_zeros(acc)
    acc = np.uint64(0)
    for i in range(LANES):
        r = np.uint64(0)
        if i < cnt and x[i] != special:
            r = ((x[i] - base) & mask) >> np.uint64(s)
        res[MASKED, i] = r
        acc |= r
    w = _bit_length(acc)
    out[MASKED, 0], out[MASKED, 2], out[MASKED, 3] = 8 + bits // 8 + 8 * w, s, w
    bases[MASKED] = base
    # row above: the difference from the word a row earlier, zigzagged
    out[ABOVE, 0] = -1
    if above:
        acc = np.uint64(0)
        for i in range(cnt):
            acc |= (x[i] - y[i]) & mask
        s = _trailing_zeros(acc)
        acc = np.uint64(0)
        for i in range(LANES):
            r = np.uint64(0)
            if i < cnt:
                sd = _signed((x[i] - y[i]) & mask, bits)
                r = _zigzag(sd >> np.int64(s), bits, mask)
            res[ABOVE, i] = r
            acc |= r
        w = _bit_length(acc)
        out[ABOVE, 0], out[ABOVE, 2], out[ABOVE, 3] = 8 * w, s, w
    return out, bases


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
    head[4] = 1
    head[5] = bits // 8
    out[8:16].view(np.uint64)[0] = np.uint64(n)
    out[16:24].view(np.uint64)[0] = np.uint64(C)
    out[24:32].view(np.uint64)[0] = special
    desc = out[HEADER:HEADER + desc_bytes].view(np.uint16)
    desc[:] = 0
    op = HEADER + desc_bytes
    res = np.zeros((3, LANES), dtype=np.uint64)
    x = np.zeros(LANES, dtype=np.uint64)
    y = np.zeros(LANES, dtype=np.uint64)
    for b in range(nb):
        lo = b * LANES
        cnt = min(LANES, n - lo)
        above = C >= LANES and lo >= C
        for i in range(cnt):
            x[i] = np.uint64(words[lo + i])
            if above:
                y[i] = np.uint64(words[lo + i - C])
        sizes, bases = _block_modes(x, y, cnt, above, bits, mask, special, res)
        mode = FOR
        if sizes[MASKED, 0] < sizes[mode, 0]:
            mode = MASKED
        if sizes[ABOVE, 0] >= 0 and sizes[ABOVE, 0] < sizes[mode, 0]:
            mode = ABOVE
        s, w = sizes[mode, 2], sizes[mode, 3]
        desc[b] = np.uint16(w | (s << 7) | (mode << 13))
        if mode == MASKED:
            m = np.uint64(0)
            for i in range(cnt):
                if x[i] == special:
                    m |= _ONE << np.uint64(i)
            out[op:op + 8].view(np.uint64)[0] = m
            op += 8
        if mode != ABOVE:
            if bits == 32:
                out[op:op + 4].view(np.uint32)[0] = np.uint32(bases[mode])
            else:
                out[op:op + 8].view(np.uint64)[0] = bases[mode]
            op += bits // 8
        for k in range(w):
            plane = np.uint64(0)
            for i in range(LANES):
                plane |= ((res[mode, i] >> np.uint64(k)) & _ONE) << np.uint64(i)
            out[op:op + 8].view(np.uint64)[0] = plane
            op += 8
    return op


@jit(nogil=True)
def decode_words(frame, words):
    """Decode ``frame`` (uint8) into ``words`` (unsigned, the header's count and width); returns
    the bytes read, or -1 where the frame is shorter than its descriptors say."""
    n = len(words)
    bits = np.int64(frame[5]) * 8
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if bits == 64 else np.uint64(0xFFFFFFFF)
    C = np.int64(frame[16:24].view(np.uint64)[0])
    special = frame[24:32].view(np.uint64)[0]
    nb = (n + LANES - 1) // LANES
    desc_bytes = (2 * nb + 3) // 4 * 4
    if len(frame) < HEADER + desc_bytes:
        return -1
    desc = frame[HEADER:HEADER + desc_bytes].view(np.uint16)
    op = HEADER + desc_bytes
    for b in range(nb):
        d = np.int64(desc[b])
        w, s, mode = d & 127, (d >> 7) & 63, (d >> 13) & 3
        need = 8 * w + (0 if mode == ABOVE else bits // 8) + (8 if mode == MASKED else 0)
        if op + need > len(frame) or mode > ABOVE or w > bits:
            return -1
        if mode == ABOVE and (C < LANES or b * LANES < C):
            return -1
        m = np.uint64(0)
        if mode == MASKED:
            m = frame[op:op + 8].view(np.uint64)[0]
            op += 8
        base = np.uint64(0)
        if mode != ABOVE:
            if bits == 32:
                base = np.uint64(frame[op:op + 4].view(np.uint32)[0])
            else:
                base = frame[op:op + 8].view(np.uint64)[0]
            op += bits // 8
        planes = frame[op:op + 8 * w].view(np.uint64)
        op += 8 * w
        lo = b * LANES
        for i in range(min(LANES, n - lo)):
            r = np.uint64(0)
            for k in range(w):
                r |= ((planes[k] >> np.uint64(i)) & _ONE) << np.uint64(k)
            if mode == ABOVE:
                sd = np.int64(r >> _ONE) ^ -np.int64(r & _ONE)
                words[lo + i] = (np.uint64(words[lo + i - C])
                                 + (np.uint64(sd << np.int64(s)) & mask)) & mask
            elif mode == MASKED and (m >> np.uint64(i)) & _ONE:
                words[lo + i] = special
            else:
                words[lo + i] = (base + (r << np.uint64(s))) & mask
    return op
