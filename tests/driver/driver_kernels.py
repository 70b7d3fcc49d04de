"""Small kernels written for what the driver tests check (the kernels that examples/asm
already shows are loaded from there)."""

# Every thread adds `inc` to one counter; the result counts executed threads.
COUNT = """
.kernel count
.param counter, ptr
.param inc, i32
        ldparam r1, counter
        ldparam r2, inc
        atom.add r3, [r1], r2
        exit
.end
"""

# Scales a table held in the module's data section: out[i] = table[i] * s (f32), 8 entries.
TABLE = """
.data
.align 16
table:  .float 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0
.text
.kernel scale_table
.param out, ptr
.param s, f32
        s2r r1, tid.x
        shli r1, r1, 2
        la r2, table
        add r2, r2, r1
        ldg r3, [r2]
        ldparam r4, s
        fmul r3, r3, r4
        ldparam r5, out
        add r5, r5, r1
        stg [r5], r3
        exit
.end
"""

# Spins forever: only the watchdog stops it.
SPIN = """
.kernel spin
LOOP:   jmp LOOP
.end
"""

# Two kernels in one module; the second starts past the first, so its entry PC is non-zero.
TWO = """
.kernel first
.param p, ptr
        ldparam r1, p
        movi r2, 11
        stg [r1], r2
        exit
.end
.kernel second
.param p, ptr
        ldparam r1, p
        movi r2, 22
        stg [r1+4], r2
        exit
.end
"""
