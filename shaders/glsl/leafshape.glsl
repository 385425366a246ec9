// The leaf's outline on its card, by shape (sylva_sim::spec::LeafShape's ids): u across the
// card, v from the stalk (0) to the tip (1). Each outline is two signed functions of the card
// point, both ≤ 0 on the blade; cheap arithmetic only, as this runs for every leaf fragment.
//   0 oval: a pointed oval, widest a little below the middle (half-width² = v(1 − v)(1 − 0.3v)²)
//   1 needle: a narrow blade of even width, pointed
//   2 heart: wide near the stalk, with a notch there
//   3 lobed: five lobes round a centre (maple, palmate, oak)
//   4 rectangle
//   5 triangle: widest at the stalk
//   6 disc
//   7 frond: a midrib with angled leaflets (palms)
vec2 leaf_outline(vec2 uv, uint shape) {
    float v = uv.y;
    float x = uv.x - 0.5;
    float ax = abs(x);
    if (shape == 1u) {
        float hw = 0.07 * min(1.0, 4.0 * (1.0 - v));
        return vec2(ax - hw, 0.02 - v);
    }
    if (shape == 2u) {
        float hw = min(0.49, 1.25 * sqrt(max(v, 0.0)) * (1.0 - v));
        return vec2(ax - hw, 0.15 - 0.8 * ax - v);
    }
    if (shape == 3u) {
        vec2 p = vec2(x, v - 0.42);
        float theta = atan(p.x, p.y);
        float r = abs(theta) < 2.4 ? 0.40 * (0.62 + 0.38 * cos(5.0 * theta)) : 0.16;
        return vec2(length(p) - r, 0.02 - v);
    }
    if (shape == 4u) {
        return vec2(ax - 0.42, abs(v - 0.5) - 0.47);
    }
    if (shape == 5u) {
        return vec2(ax - 0.45 * (1.0 - v), 0.02 - v);
    }
    if (shape == 6u) {
        return vec2(length(vec2(x, v - 0.5)) - 0.46, -1.0);
    }
    if (shape == 7u) {
        float hw = 0.5 * pow(max(sin(3.14159265 * v), 0.0), 0.7);
        float leaflet = fract(v * 12.0 - ax * 2.0) - 0.45;
        return vec2(min(ax - 0.025, max(ax - hw, leaflet)), 0.01 - v);
    }
    float taper = 1.0 - 0.3 * v;
    return vec2(x * x - v * (1.0 - v) * taper * taper, 0.02 - v);
}

// Whether a card point lies outside the blade (cut).
bool outside_leaf(vec2 uv, uint shape) {
    vec2 f = leaf_outline(uv, shape);
    return f.x > 0.0 || f.y > 0.0;
}

// How much of this fragment the blade covers, 0 to 1: the outline's two functions measured in
// pixels through their screen-space derivatives, so the edge is a ramp one pixel wide. Under
// multisampling with alpha-to-coverage this is the share of samples the leaf covers; at one
// sample, fragments under 0.5 are cut (the same outline as `outside_leaf`).
float leaf_coverage(vec2 uv, uint shape) {
    vec2 f = leaf_outline(uv, shape);
    float d = max(f.x / max(fwidth(f.x), 1e-7), f.y / max(fwidth(f.y), 1e-7));
    return clamp(0.5 - d, 0.0, 1.0);
}
