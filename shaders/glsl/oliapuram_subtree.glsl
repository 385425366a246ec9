// Breakage and uprooting (the rule of `sylva_sim::dynamics::oliapuram::device`, which states
// it), for one segment v whose children's sums are done, after the pose kernel (the step's
// pose); included by oliapuram_subtree.comp (one level per dispatch) and
// oliapuram_subtree_trees.comp (one tree per workgroup).
//
// S_F(v) = F_v + Σ its leaves' F + Σ its children's S_F, and S_T(v) likewise with c × F, every
// c taken from its tree's root base o (the same moment, M_v = Σ (c - o) × F - (p_v - o) × S_F,
// without the cancellation of world positions far from the origin). The bending moment is M's
// part across the segment's axis a: |M - (M·a)·a|; over the joint's limit, the joint is listed
// in `over`.
// The loads on segment v and its leaves alone, summed into sums[v] (S_F) and sums[n + v] (S_T
// about its tree's root base): every segment at once, before the sums over the subtrees.
void own_loads(uint v) {
    uint n = pc.counts.x;
    uint m = pc.counts.y;
    Seg s = segs[v];
    vec3 o = segs[floatBitsToUint(brk[v].w)].root.xyz;
    vec3 axis = segment_axis(level[v]);
    vec3 p = level[n + v].xyz - o;
    vec3 f = loads[v].xyz;
    vec3 sf = f;
    vec3 st = cross(p + axis * s.a.w, f);
    for (uint j = s.lv.x; j < s.lv.y; j++) {
        uint lf = leaves[j].idx.y;
        vec4 lq = pose[2u * n + m + lf];
        vec3 c = pose[2u * n + lf].xyz + segment_axis(lq) * leaves[j].b.w - o;
        vec3 fl = loads[n + j].xyz;
        sf += fl;
        st += cross(c, fl);
    }
    sums[v] = vec4(sf, 0.0);
    sums[n + v] = vec4(st, 0.0);
}

// Joint v, its own loads summed (`own_loads`) and its children's subtrees done: its subtree's
// sums, its bending moment, and whether it breaks.
void subtree_joint(uint v) {
    uint n = pc.counts.x;
    Seg s = segs[v];
    vec4 b = brk[v];
    vec3 o = segs[floatBitsToUint(b.w)].root.xyz;
    vec3 axis = segment_axis(level[v]);
    vec3 p = level[n + v].xyz - o;
    vec3 sf = sums[v].xyz;
    vec3 st = sums[n + v].xyz;
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
