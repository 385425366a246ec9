#version 460
// Oliapuram & Kumar's integration phase (paper 004 §3.2, "Integration of movements"): one
// dispatch per depth level of the whole forest, root to tips; invocation k places segment
// `counts.z + k` of the level: its rest orientation carried by its parent, turned by |θ'| about
// θ' at its fixed end (§3.1.2, Eqs. 20–21's θ'), and its base on its parent's tip. Parents lie
// in earlier levels, written by earlier dispatches. The twin of `kernels::integrate`.
#include "oliapuram_common.glsl"

void main() {
    uint n = pc.counts.x;
    uint k = gl_GlobalInvocationID.x;
    if (k >= pc.counts.w) {
        return;
    }
    uint v = pc.counts.z + k;
    Seg s = segs[v];
    vec4 turn = rotation(seg_in[v].xyz);
    uint p = s.topo.x;
    if (p == NO_PARENT) {
        level[v] = renormalize(qmul(turn, s.rest));
        level[n + v] = vec4(s.root.xyz, 0.0);
    } else {
        vec4 qp = level[p];
        level[v] = renormalize(qmul(turn, qmul(qp, s.rest)));
        level[n + v] = vec4(level[n + p].xyz + segment_axis(qp) * segs[p].c.z, 0.0);
    }
}
