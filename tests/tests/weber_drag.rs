//! Wind drag in Weber's model against the physics of a cylinder in a flow: the bark's drag
//! acts on the wind's component across the segment's axis (Weber's f = l·r·(d·w) keeps only
//! the part of the wind the segment's side faces), so a branch lying along the wind adds no
//! load to its trunk, while a branch across the wind adds its full drag.

use glam::Vec3;
use sylva_engine::JobSystem;
use sylva_sim::dynamics::weber::{WeberModel, WeberParams};
use sylva_sim::skeleton::{Skeleton, SkeletonSegment};
use sylva_sim::{Damping, DragLaw, GustingWind, Material, Stiffness};
use sylva_tests::{run, sim_of};

/// Steady wind speed [m/s], blowing towards +x.
const WIND: f32 = 10.0;

/// A straight run of `n` segments of radius `r` from `from` to `to`, hanging from `parent`.
fn push_run(segments: &mut Vec<SkeletonSegment>, parent: Option<u32>, from: Vec3, to: Vec3, n: usize, r: f32) {
    let mut parent = parent;
    for k in 0..n {
        let base = from.lerp(to, k as f32 / n as f32);
        let tip = from.lerp(to, (k + 1) as f32 / n as f32);
        segments.push(SkeletonSegment {
            parent,
            base,
            tip,
            radius_base: r,
            radius_tip: r,
        });
        parent = Some(segments.len() as u32 - 1);
    }
}

/// Steps until no angle moves any more (a static equilibrium), at most `max_steps`.
fn settle(sim: &mut WeberModel, max_steps: usize) {
    let jobs = JobSystem::new(1).unwrap();
    let mut done = 0;
    loop {
        run(sim, &jobs, 100, |_, _| {});
        done += 100;
        let fastest = (0..2)
            .map(|p| sim.plane(p).vel.iter().fold(0.0f32, |a, v| a.max(v.abs())))
            .fold(0.0f32, f32::max);
        if fastest < 1e-5 {
            return;
        }
        assert!(
            done < max_steps,
            "no equilibrium after {done} steps (fastest joint {fastest} rad/s)"
        );
    }
}

/// Gravity off, so that wind is the only load; critically damped joints to settle. Weber's
/// linear drag, the law the beam-theory references here are worked out with (the quadratic
/// law scales each segment's force by the flow across it, |w|·sin φ/10 m/s, see
/// `sine_law`).
fn windy(material: Material) -> (Material, WeberParams) {
    (
        Material {
            damping: Damping::Ratio(1.0),
            compensate_gravity: false,
            drag_law: DragLaw::Linear,
            ..material
        },
        WeberParams {
            dt: 0.01,
            gravity: 0.0,
            ..WeberParams::default()
        },
    )
}

/// A vertical trunk (3 m, radius 3 cm, 15 segments) in a 10 m/s wind, alone and with a 1 m
/// branch (radius 1 cm, 5 segments) at its top: horizontal along the wind, horizontal across
/// it, or upright (across it too). Along the wind the branch's side faces no flow: the trunk
/// bends as if the branch were not there. Across it the branch's drag P = c·|w|
/// (c = wood drag × 2r × l) pushes the trunk's top. Upright, P and its moment M = P·l/2 act
/// on the top in the trunk's plane of bending, which adds P·H³/(3·E·I) + M·H²/(2·E·I) to the
/// deflection (Euler-Bernoulli). Horizontal across the wind, M would twist a real trunk; the
/// model has no twist (Weber: "we can ignore axial twisting of branches") and its separable
/// angles turn that moment into bending, so the deflection added lies between the point
/// load's alone and the upright branch's.
#[test]
fn a_branch_along_the_wind_does_not_push_its_trunk() {
    let (height, r_trunk, r_branch, branch_len) = (3.0f32, 0.03f32, 0.01f32, 1.0f32);
    let top = Vec3::new(0.0, height, 0.0);
    let tree = |branch: Option<Vec3>| {
        let mut segments = Vec::new();
        push_run(&mut segments, None, Vec3::ZERO, top, 15, r_trunk);
        if let Some(dir) = branch {
            push_run(&mut segments, Some(14), top, top + dir * branch_len, 5, r_branch);
        }
        Skeleton {
            segments,
            leaves: Vec::new(),
        }
    };
    let skeletons = [
        tree(None),
        tree(Some(Vec3::X)),
        tree(Some(Vec3::Z)),
        tree(Some(Vec3::Y)),
    ];
    let (material, params) = windy(Material::default());
    let mut sim = sim_of(&skeletons, material, params);
    // The trunk's top segment in each tree (the forest orders segments by depth): the one whose
    // tip is at the trunk's top. Trees stand 20 m apart along x.
    let n = sim.forest().segment_count();
    let rest: Vec<Vec3> = (0..n).map(|i| sylva_tests::tip(&sim, i)).collect();
    let tops: Vec<usize> = (0..4)
        .map(|t| {
            let want = top + Vec3::new(20.0 * t as f32, 0.0, 0.0);
            (0..n)
                .min_by(|&a, &b| (rest[a] - want).length().total_cmp(&(rest[b] - want).length()))
                .unwrap()
        })
        .collect();
    for (t, &i) in tops.iter().enumerate() {
        assert!((rest[i] - top - Vec3::new(20.0 * t as f32, 0.0, 0.0)).length() < 1e-5);
    }
    sim.set_wind(Box::new(GustingWind::new(WIND, 0.0, 0.0, 1).unwrap()));
    settle(&mut sim, 20_000);
    let deflection: Vec<f64> = tops
        .iter()
        .map(|&i| (sylva_tests::tip(&sim, i).x - rest[i].x) as f64)
        .collect();
    let [alone, along, across, upright] = [deflection[0], deflection[1], deflection[2], deflection[3]];

    // Euler-Bernoulli for the same trunk: uniform load q = c'·|w| per metre, and the across
    // branch's point load at the top.
    let Stiffness::Beam { youngs_modulus } = material.stiffness else {
        panic!("the default material is a beam")
    };
    let ei = (youngs_modulus * std::f32::consts::PI * r_trunk.powi(4) / 4.0) as f64;
    let q = (material.wood_drag * 2.0 * r_trunk * WIND) as f64;
    let p = (material.wood_drag * 2.0 * r_branch * branch_len * WIND) as f64;
    let h = height as f64;
    let beam_alone = q * h.powi(4) / (8.0 * ei);
    let beam_point = p * h.powi(3) / (3.0 * ei);
    let beam_upright = beam_point + 0.5 * p * branch_len as f64 * h * h / (2.0 * ei);
    eprintln!(
        "trunk top deflection: alone {:.3} mm (beam {:.3} mm); with the branch along the wind \
         {:.3} mm, across {:.3} mm, upright {:.3} mm (beam: + {:.3} mm for the point load, \
         + {:.3} mm with its moment)",
        alone * 1e3,
        beam_alone * 1e3,
        along * 1e3,
        across * 1e3,
        upright * 1e3,
        beam_point * 1e3,
        beam_upright * 1e3,
    );
    assert!(
        (alone - beam_alone).abs() < 0.02 * beam_alone,
        "trunk alone {alone} m, beam theory {beam_alone} m"
    );
    assert!(
        (along - alone).abs() < 0.01 * alone,
        "a branch along the wind moved its trunk's top {along} m against {alone} m without it"
    );
    assert!(
        (upright - alone - beam_upright).abs() < 0.03 * beam_upright,
        "an upright branch added {} m, beam theory {beam_upright} m",
        upright - alone
    );
    assert!(
        across - alone > 0.97 * beam_point && across - alone < 1.03 * beam_upright,
        "a horizontal branch across the wind added {} m, beam theory {beam_point} m to \
         {beam_upright} m",
        across - alone
    );
}

/// One segment's wind force, read from the static equilibrium of its own joint and its
/// parent's: a 1 m vertical segment carries a 1 m segment tilted by α from vertical in the
/// x-y plane, in a wind along +x, so the wind meets the segment's axis at φ = 90° - α. At rest
/// (gravity off) the child's joint holds τ₁ = ½·d₁·F₁ (d its correction direction vector) and
/// the root's holds τ₀ + τ₁ with τ₀ = d₀·(½·F₀ + F₁): two equations for the two components of
/// F₁ in the plane. Drag on a cylinder acts across its axis, F₁ = c·(w - (w·a)a): magnitude
/// c·|w|·sin φ, nothing along the axis: Weber's linear law. Under the quadratic law the flow
/// across the axis, |w|·sin φ, also sets the scale: c·|w|·sin φ·(|w|·sin φ/10 m/s), the
/// independence principle of cylinder drag (½·ρ·C_d·d·l·|u_n|·u_n).
#[test]
fn a_segments_drag_scales_with_the_sine_of_the_wind_angle() {
    sine_law(DragLaw::Linear);
}

#[test]
fn a_segments_quadratic_drag_scales_with_the_square_of_the_sine() {
    sine_law(DragLaw::Quadratic);
}

fn sine_law(law: DragLaw) {
    let k = 2000.0;
    let material = Material {
        stiffness: Stiffness::Power {
            coefficient: k,
            exponent: 0.0,
        },
        ..Material::default()
    };
    let (material, params) = windy(material);
    let material = Material {
        drag_law: law,
        ..material
    };
    let quadratic = law == DragLaw::Quadratic;
    let w = Vec3::new(WIND, 0.0, 0.0);
    let mut report = String::new();
    for alpha_deg in [0.0f32, 15.0, 30.0, 45.0, 60.0, 75.0, 90.0] {
        let alpha = alpha_deg.to_radians();
        let mut segments = Vec::new();
        let top = Vec3::Y;
        push_run(&mut segments, None, Vec3::ZERO, top, 1, 0.02);
        push_run(
            &mut segments,
            Some(0),
            top,
            top + Vec3::new(alpha.sin(), alpha.cos(), 0.0),
            1,
            0.01,
        );
        let skel = Skeleton {
            segments,
            leaves: Vec::new(),
        };
        let mut sim = sim_of(&[skel], material, params);
        sim.set_wind(Box::new(GustingWind::new(WIND, 0.0, 0.0, 1).unwrap()));
        settle(&mut sim, 20_000);
        let f = sim.forest();
        let (c0, c1) = (f.seg.drag[0] as f64, f.seg.drag[1] as f64);
        let (k0, k1) = (f.seg.stiffness[0] as f64, f.seg.stiffness[1] as f64);
        let (r0, r1) = (f.seg.rest[0][0] as f64, f.seg.rest[0][1] as f64);
        let pl = sim.plane(0);
        let (th0, th1) = (pl.theta[0] as f64, pl.theta[1] as f64);
        let (pose, dir) = (sim.pose(), sim.directions());
        let d0 = dir[0][0].as_dvec3();
        let d1 = dir[0][1].as_dvec3();
        let axis = (pose.orient[1] * Vec3::Y).as_dvec3();
        let axis0 = (pose.orient[0] * Vec3::Y).as_dvec3();
        let wd = w.as_dvec3();
        // The root's own drag (a vertical cylinder across the wind).
        let across0 = wd - axis0 * wd.dot(axis0);
        let f0 = across0 * c0 * if quadratic { across0.length() / 10.0 } else { 1.0 };
        let tau1 = k1 * (th1 - th0 - r1);
        let tau0 = k0 * (th0 - r0) - tau1;
        // F₁ = a_perp·e + a_par·axis, e the unit direction of d₁ (across the axis).
        let e = d1.normalize();
        let across = 2.0 * tau1 / d1.length();
        let along = (tau0 - d0.dot(0.5 * f0) - across * d0.dot(e)) / d0.dot(axis);
        let phi = std::f64::consts::FRAC_PI_2 - alpha as f64;
        let scale = c1 * WIND as f64;
        let expected = scale * phi.sin() * if quadratic { WIND as f64 * phi.sin() / 10.0 } else { 1.0 };
        report += &format!(
            "\n  φ = {:4.1}°: across {:.5} N (c·|w|·sin φ = {expected:.5} N), along {:+.5} N",
            phi.to_degrees(),
            across,
            if alpha_deg > 0.0 { along } else { f64::NAN }
        );
        assert!(
            (across - expected).abs() < 0.005 * scale,
            "{law:?}, φ = {:.1}°: force across the axis {across} N, expected {expected} N{report}",
            phi.to_degrees()
        );
        // With the segment vertical its axial force is invisible to the vertical root.
        if alpha_deg > 0.0 {
            assert!(
                along.abs() < 0.005 * scale,
                "φ = {:.1}°: force along the axis {along} N, expected none{report}",
                phi.to_degrees()
            );
        }
    }
    eprintln!("drag on a 1 m segment of radius 1 cm in {WIND} m/s:{report}");
}
