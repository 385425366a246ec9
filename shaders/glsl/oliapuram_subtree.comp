#version 460
// Breakage and uprooting (the rule of `sylva_sim::dynamics::oliapuram::device`, which states
// it): one dispatch per depth level, from the deepest to the roots; invocation k takes segment
// v = counts.z + k of the level, after the pose kernel (the step's pose).
//
// S_F(v) = F_v + Σ its leaves' F + Σ its children's S_F, and S_T(v) likewise with c × F, every
// c taken from its tree's root base o (the same moment, M_v = Σ (c - o) × F - (p_v - o) × S_F,
// without the cancellation of world positions far from the origin). The children lie in the
// next level, summed by the dispatch before. The bending moment is M's part across the
// segment's axis a: |M - (M·a)·a|; over the joint's limit, the joint is listed in `over`.
#include "oliapuram_common.glsl"

void main() {
    uint n = pc.counts.x;
    uint k = gl_GlobalInvocationID.x;
    if (k >= pc.counts.w) {
        return;
    }
    uint v = pc.counts.z + k;
    Seg s = segs[v];
    vec4 b = brk[v];
    vec3 o = segs[floatBitsToUint(b.w)].root.xyz;
    vec4 q = level[v];
    vec3 axis = segment_axis(q);
    vec3 p = level[n + v].xyz - o;
    vec3 f = loads[v].xyz;
    vec3 sf = f;
    vec3 st = cross(p + axis * s.a.w, f);
    uint m = pc.counts.y;
    for (uint j = s.lv.x; j < s.lv.y; j++) {
        uint lf = leaves[j].idx.y;
        vec4 lq = pose[2u * n + m + lf];
        vec3 c = pose[2u * n + lf].xyz + segment_axis(lq) * leaves[j].b.w - o;
        vec3 fl = loads[n + j].xyz;
        sf += fl;
        st += cross(c, fl);
    }
    for (uint ch = s.topo.y; ch < s.topo.z; ch++) {
        sf += sums[ch].xyz;
        st += sums[n + ch].xyz;
    }
    vec3 moment = st - cross(p, sf);
    float bending = length(moment - dot(moment, axis) * axis);
    sums[v] = vec4(sf, bending);
    sums[n + v] = vec4(st, 0.0);
    if (bending > b.x) {
        uint at = atomicAdd(over[0], 1u);
        if (at < n) {
            over[1u + at] = v;
        }
    }
}
