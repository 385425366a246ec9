#version 460
// The pose the renderer reads (the twin of `leaves::pose`), and where the CPU samples the wind
// for the next step (`kernels::centroids`, `leaves::centres`): one invocation per segment
// (gid < n, level index) and per leaf (model order).
#include "oliapuram_common.glsl"

void main() {
    uint n = pc.counts.x;
    uint m = pc.counts.y;
    uint gid = gl_GlobalInvocationID.x;
    if (gid < n) {
        uint v = gid;
        uint i = segs[v].topo.w;
        vec4 q = level[v];
        vec3 b = level[n + v].xyz;
        pose[i] = vec4(b, 0.0);
        pose[n + i] = q;
        points[v] = vec4(b + segment_axis(q) * segs[v].a.w, 0.0);
    } else if (gid < n + m) {
        uint j = gid - n;
        Leaf l = leaves[j];
        uint v = l.idx.x;
        uint f = l.idx.y;
        vec4 q = level[v];
        vec3 b = level[n + v].xyz;
        float psi = leaf_in[j].x;
        // rest · (sin(ψ/2)·i + cos(ψ/2)): the blade turned by ψ about its own x axis (§4).
        vec2 sc = half_turn(psi * psi);
        float s = sc.x * psi;
        float c = sc.y;
        vec4 r = l.rest;
        vec4 local = vec4(c * r.x + s * r.w, c * r.y + s * r.z, c * r.z - s * r.y, c * r.w - s * r.x);
        vec3 pos = b + segment_axis(q) * l.b.z;
        vec4 o = qmul(q, local);
        pose[2u * n + f] = vec4(pos, 0.0);
        pose[2u * n + m + f] = o;
        points[n + j] = vec4(pos + segment_axis(o) * l.b.w, 0.0);
    }
}
