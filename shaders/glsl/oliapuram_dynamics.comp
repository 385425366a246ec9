#version 460
// Oliapuram & Kumar's dynamics phase (paper 004 §3.2, "Dynamics calculation"): one invocation
// per segment (gid < n) and per leaf (n ≤ gid < n + m) of the whole forest. Every body reads the
// state of the step's start only (its children's restorations included, §3.2), so all are
// independent. The twin of `kernels::dynamics` and `leaves::step_leaf`.
#include "oliapuram_common.glsl"

// Eqs. 16–17: the axial damping -(μ/I)·ω·|ω| as an angular acceleration, its magnitude clamped
// to |ω|/Δt so it never reverses the motion within a step (`axial_damping`).
vec3 axial_damping(vec3 omega, float mu_i, float h) {
    return omega * -min(mu_i * length(omega), 1.0 / h);
}

float axial_damping_1d(float omega, float mu_i, float h) {
    return omega * -min(mu_i * abs(omega), 1.0 / h);
}

// `Material::drag_scale` under the quadratic law (`quadratic_drag_scale`): |u|/U for bark and
// for leaves up to U_r, then (U_r/U)·(|u|/U_r)^(1+β) for leaves (pc.leaf: y = 1/U, z = U_r,
// w = 1 + β).
float drag_scale(float speed, bool leaf) {
    if (!leaf || speed <= pc.leaf.z) {
        return speed * pc.leaf.y;
    }
    float onset = pc.leaf.z * pc.leaf.y;
    return pc.leaf.w == 0.0 ? onset : onset * pow(speed / pc.leaf.z, pc.leaf.w);
}

// The wind force over I on a segment (`segment_drag`): linear, gain·w; quadratic, on the
// velocity relative to the centroid, u = w - ω × c, its scale capped at 1/(gain·|c|²·Δt).
vec3 segment_drag(vec3 wind, vec3 omega, vec3 c, float gain, float h) {
    if (pc.cells.w == 0u) {
        return wind * gain;
    }
    vec3 u = wind - cross(omega, c);
    float scale = min(drag_scale(length(u), false), 1.0 / (gain * dot(c, c) * h));
    return u * (gain * scale);
}

// A leaf's wind acceleration about its hinge (`leaf_drag`): linear, gain·(w·n); quadratic, on
// u = w - rate·(L/2)·n, its scale capped at 1/(gain·(L/2)·Δt).
float leaf_drag(vec3 wind, vec3 nrm, float rate, float half_len, float gain, float h) {
    if (pc.cells.w == 0u) {
        return gain * dot(wind, nrm);
    }
    vec3 u = wind - nrm * (rate * half_len);
    float scale = min(drag_scale(length(u), true), 1.0 / (gain * half_len * h));
    return gain * scale * dot(u, nrm);
}

void flag(bool ok) {
    if (!ok) {
        atomicOr(status[0], 1u);
    }
}

bool finite3(vec3 v) {
    return !any(isnan(v)) && !any(isinf(v));
}

bool finite1(float v) {
    return !isnan(v) && !isinf(v);
}

void main() {
    uint n = pc.counts.x;
    uint m = pc.counts.y;
    uint gid = gl_GlobalInvocationID.x;
    float h = pc.wind.w;
    if (gid < n) {
        uint v = gid;
        Seg s = segs[v];
        vec4 q = level[v];
        // Eq. 12: N = F × c; the moment about the fixed end of a force F at c is c × F.
        vec3 c = segment_axis(q) * s.a.w;
        vec3 wind = pc.wind.xyz;
        if (pc.mode.x == 1u) {
            wind = samples[v].xyz;
        } else if (pc.mode.x == 2u) {
            wind = fluid_sample(level[n + v].xyz + c);
        }
        vec3 phi = seg_in[v].xyz;
        vec3 omega = seg_in[n + v].xyz;
        // Eq. 14: F_wind = S_f·σ·v at the centroid (or its quadratic form); and the segment's
        // weight.
        vec3 drag = segment_drag(wind, omega, c, s.b.x, h);
        vec3 f = drag - vec3(0.0, s.b.y, 0.0);
        vec3 acc = cross(c, f) - s.a.xyz;
        // The breakage rule's load: the bark drag as a force (times I) and the wood's weight.
        vec4 k = brk[v];
        loads[v] = vec4(drag * k.z - vec3(0.0, k.y, 0.0), 0.0);
        // Eqs. 18–19: T = -Σ k_i·K_i over the children and leaves, K_i = k_i·(θ - θ'_i)
        // (Eq. 15) of the step's start (§3.2).
        for (uint ch = s.topo.y; ch < s.topo.z; ch++) {
            acc += seg_in[ch].xyz * segs[ch].c.y;
        }
        for (uint j = s.lv.x; j < s.lv.y; j++) {
            acc += leaves[j].a.xyz * leaf_in[j].x;
        }
        // Eqs. 16–17.
        acc += axial_damping(omega, s.b.z, h);
        // Eqs. 11, 15, 20, 21 with the spring's acceleration at the step's end
        // (`step_body`): θ'·(1 + ½Δt²ω₀²) = θ + ωΔt + ½Δt²·acc.
        vec3 phi1 = (phi + omega * h + acc * (0.5 * h * h)) * s.c.x;
        vec3 omega1 = omega + (acc - phi1 * s.b.w) * h;
        flag(finite3(phi1) && finite3(omega1));
        seg_out[v] = vec4(phi1, 0.0);
        seg_out[n + v] = vec4(omega1, 0.0);
    } else if (gid < n + m) {
        // §4: a leaf is a pseudo-branch with one degree of freedom, turned by the wind's
        // component along its normal (`step_leaf`).
        uint j = gid - n;
        Leaf l = leaves[j];
        uint f = l.idx.y;
        vec4 q = pose[2u * n + m + f];
        vec3 wind = pc.wind.xyz;
        if (pc.mode.x == 1u) {
            wind = samples[n + j].xyz;
        } else if (pc.mode.x == 2u) {
            wind = fluid_sample(pose[2u * n + f].xyz + segment_axis(q) * l.b.w);
        }
        vec2 st = leaf_in[j];
        vec3 nrm = axis_z(q);
        float drag = leaf_drag(wind, nrm, st.y, l.b.w, l.a.w, h);
        float acc = drag + axial_damping_1d(st.y, pc.leaf.x, h);
        // The breakage rule's load: the wind's force along the normal (the angular
        // acceleration about the hinge times I/(L/2)) and the blade's weight.
        vec4 k = brk[n + j];
        loads[n + j] = vec4(nrm * (drag * k.x) - vec3(0.0, k.y, 0.0), 0.0);
        float psi1 = (st.x + st.y * h + acc * (0.5 * h * h)) * l.b.y;
        float rate1 = st.y + (acc - psi1 * l.b.x) * h;
        flag(finite1(psi1) && finite1(rate1));
        leaf_out[j] = vec2(psi1, rate1);
    }
}
