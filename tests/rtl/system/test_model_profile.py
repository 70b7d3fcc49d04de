"""The model profiler's arithmetic (verification/model_profile.py) on a hand-written callgrind
output and generated C++, against hand-computed sums. (Running it needs valgrind and a model
build; docs/memory-system.md quotes its output.)"""

from __future__ import annotations

from simtgpu.verification.model_profile import line_costs, module_costs

# Two files, inlined code (fi/fe), relative positions (+n, -n, *), a call whose inclusive cost
# must not count, and a file named by id only after its first use.
CALLGRIND = """\
version: 1
positions: line
events: Ir
fl=(1) /build/obj/Vharness___024root__0.cpp
fn=(1) eval
10 5
+2 7
fi=(2) /venv/include/verilated_funcs.h
294 3
fe=(1)
-280 4
cfl=(1)
cfn=(2) helper
calls=1 20
* 100
fn=(2)
20 11
* 1
fl=(2)
fn=(3) lib_fn
300 2
totals: 33
"""

CPP = """\
void Vharness___024root___eval(Vharness___024root* vlSelf) {
    vlSelf->a = 1;
    vlSelf->b = 2;
    vlSelf->c = 3;
    vlSelf->d = 4;
    vlSelf->e = 5;
    vlSelf->f = 6;
    vlSelf->g = 7;
    vlSelf->harness__DOT__gpu__DOT__core0__DOT__lsu__DOT__x = 1;
    vlSelf->t = vlSelf->harness__DOT__gpu__DOT__core1__DOT__alu3__DOT__y;
    vlSelf->u = 0;
    vlSelf->v = vlSelf->harness__DOT__gpu__DOT__l2__DOT__bank0__DOT__z;
    vlSelf->w = 0;
}
void Vharness___024root___other(Vharness___024root* vlSelf) {
    vlSelf->p = 0;
}
"""


def test_line_costs_follow_positions_and_skip_calls():
    got = line_costs(CALLGRIND)
    root = "/build/obj/Vharness___024root__0.cpp"
    funcs = "/venv/include/verilated_funcs.h"
    assert got == {(root, 10): 5, (root, 12): 7, (funcs, 294): 3, (root, 14): 4,
                   (root, 20): 12, (funcs, 300): 2}
    assert sum(got.values()) == 33  # the file's total: the call's 100 is not counted


def test_module_costs_charge_lines_to_the_instance_they_name(tmp_path):
    (tmp_path / "Vharness___024root__0.cpp").write_text(CPP)
    costs = {("/x/Vharness___024root__0.cpp", 9): 8,  # names core0's lsu
             ("/x/Vharness___024root__0.cpp", 10): 4,  # names core1's alu3
             ("/x/Vharness___024root__0.cpp", 11): 2,  # no name: the last one above (alu)
             ("/x/Vharness___024root__0.cpp", 12): 1,  # the L2's bank
             ("/x/Vharness___024root__0.cpp", 16): 6,  # another function, no name yet
             ("/venv/include/verilated_funcs.h", 294): 3}
    assert module_costs(costs, tmp_path, depth=2) == {
        "gpu/coreN": 14, "gpu/lN": 1, "?": 6, "lib:verilated_funcs.h": 3}
    assert module_costs(costs, tmp_path, depth=3) == {
        "gpu/coreN/lsu": 8, "gpu/coreN/aluN": 6, "gpu/lN/bankN": 1, "?": 6,
        "lib:verilated_funcs.h": 3}
