use super::*;
use crate::material::Material;

/// The forest of one tree `skel` and its generated shape's pose.
fn at_rest(skel: &Skeleton) -> (Forest, Pose) {
    let forest = crate::forest::at_origin(skel, &Material::default());
    let rest = Pose::of_shape(&forest);
    (forest, rest)
}

/// The lower and the upper branch's outer segments of `skeleton()`'s forest, found by where
/// they start in `rest`.
fn outer_segments(forest: &Forest, rest: &Pose) -> (usize, usize) {
    let at = |p: Vec3| {
        (0..forest.segment_count())
            .find(|&i| (rest.base[i] - p).length() < 1e-4)
            .unwrap()
    };
    (at(Vec3::new(1.0, 1.0, 0.0)), at(Vec3::new(1.0, 2.0, 0.0)))
}

/// `rest` with segment `upper` (the upper branch's outer segment) swung down until its tip
/// is `gap` above the lower branch's axis (y = 1).
fn swung_down(forest: &Forest, rest: &Pose, upper: usize, gap: f32) -> Pose {
    let mut pose = rest.clone();
    let l = forest.seg.length[upper];
    let drop = rest.base[upper].y - 1.0 - gap;
    let dir = Vec3::new((l * l - drop * drop).sqrt(), -drop, 0.0).normalize();
    pose.orient[upper] = Quat::from_rotation_arc(Vec3::Y, dir);
    pose
}

/// A trunk with two branches, the upper one's outer segment reaching down towards the
/// lower one's (20 cm apart at the tip).
fn skeleton() -> Skeleton {
    let seg = SkeletonSegment::cylinder;
    Skeleton {
        segments: vec![
            seg(None, Vec3::ZERO, Vec3::Y, 0.05),
            seg(Some(0), Vec3::Y, Vec3::Y * 2.0, 0.04),
            seg(Some(0), Vec3::Y, Vec3::new(1.0, 1.0, 0.0), 0.02),
            seg(Some(2), Vec3::new(1.0, 1.0, 0.0), Vec3::new(2.0, 1.0, 0.0), 0.02),
            seg(Some(1), Vec3::Y * 2.0, Vec3::new(1.0, 2.0, 0.0), 0.02),
            seg(Some(4), Vec3::new(1.0, 2.0, 0.0), Vec3::new(2.0, 1.2, 0.0), 0.02),
        ],
        leaves: Vec::new(),
    }
}

/// At rest nothing answers; pushed closer than their rest distance and their safe
/// distances, the two outer segments get equal and opposite forces that push them apart
/// along the line between them (Eq. 5.1, Fig. 5.2), and none of the other segments does.
#[test]
fn a_pair_pushed_together_is_pushed_apart() {
    let skel = skeleton();
    let (forest, rest) = at_rest(&skel);
    let jobs = JobSystem::new(1).unwrap();
    let counting = SelfCollisionParams {
        count_interpenetrating: true,
        ..SelfCollisionParams::default()
    };
    let mut sc = SelfCollision::new(&forest, &rest, counting).unwrap();
    let mut forces = vec![Vec3::ZERO; forest.segment_count()];
    sc.step(&jobs, &forest, &rest, 1.0 / 60.0, &mut forces);
    assert!(forces.iter().all(|f| *f == Vec3::ZERO), "{forces:?}");
    assert!(sc.stats().counted && sc.stats().close_pairs == 0);
    // Swing the upper outer segment down until its tip is 2 cm above the lower one's axis.
    let (lower, upper) = outer_segments(&forest, &rest);
    let pose = swung_down(&forest, &rest, upper, 0.02);
    let mut forces = vec![Vec3::ZERO; forest.segment_count()];
    sc.step(&jobs, &forest, &pose, 1.0 / 60.0, &mut forces);
    let s = sc.stats();
    assert!(s.responding >= 1, "{s:?}");
    assert_eq!(
        s.close_pairs, 1,
        "prisms of 2 cm, their axes 2 cm apart: interpenetrating"
    );
    assert!(forces[upper].y > 0.0 && forces[lower].y < 0.0, "{forces:?}");
    assert!((forces[upper] + forces[lower]).length() < 1e-4 * forces[upper].length());
    for (i, f) in forces.iter().enumerate() {
        if i != upper && i != lower {
            assert_eq!(*f, Vec3::ZERO, "segment {i}");
        }
    }
}

/// With holding, a pair kept inside its radii pushes harder each step it stays there, by
/// the same amount each step (the integral of its capped spring, [`HOLD_GAIN`]), while the
/// plain spring's push stays the same; a step out of reach fades what it held by
/// [`HOLD_FADE`].
#[test]
fn a_held_pair_pushes_harder_while_it_stays_inside() {
    let skel = skeleton();
    let (forest, rest) = at_rest(&skel);
    let jobs = JobSystem::new(1).unwrap();
    let params = SelfCollisionParams::default();
    let (_, upper) = outer_segments(&forest, &rest);
    let swung = |gap: f32| swung_down(&forest, &rest, upper, gap);
    // Prisms of 2 cm radius: 2 cm apart they are inside their radii, 5 cm apart outside
    // them but within their rest length (radii and skins).
    let (pressed, eased) = (swung(0.02), swung(0.05));
    let mut plain = SelfCollision::new(&forest, &rest, params).unwrap();
    let mut held = SelfCollision::new(&forest, &rest, params).unwrap().with_holding();
    let push = |sc: &mut SelfCollision, pose: &Pose| {
        let mut forces = vec![Vec3::ZERO; forest.segment_count()];
        sc.step(&jobs, &forest, pose, 1.0 / 60.0, &mut forces);
        forces[upper].length()
    };
    for sc in [&mut plain, &mut held] {
        push(sc, &rest);
        // The first pressed step also damps the closing speed.
        push(sc, &pressed);
    }
    let (p1, h1) = (push(&mut plain, &pressed), push(&mut held, &pressed));
    let (p2, h2) = (push(&mut plain, &pressed), push(&mut held, &pressed));
    let (p3, h3) = (push(&mut plain, &pressed), push(&mut held, &pressed));
    assert!(p1 > 0.0 && p1 == p2 && p2 == p3, "{p1} {p2} {p3}");
    let step = h3 - h2;
    assert!(h1 > p1 && step > 0.0, "{h1} {h2} {h3} against {p1}");
    assert!((h2 - h1 - step).abs() < 1e-3 * step, "{h1} {h2} {h3}");
    // Eased apart (no closing speed): still pushed by the spring, outside the radii, so
    // what it held fades.
    let (p, h) = (push(&mut plain, &eased), push(&mut held, &eased));
    assert!(p > 0.0 && p < p3, "{p} {p3}");
    let expect = (h3 - p3) * HOLD_FADE;
    assert!((h - p - expect).abs() < 2e-3 * expect, "{} against {expect}", h - p);
}

/// Held forces stop at their caps (`with_hold_caps`): a pair kept inside its radii holds
/// more each step until its held force reaches the smaller of its two segments' caps, then
/// holds that; caps of the wrong count, negative or NaN are refused.
#[test]
fn held_forces_stop_at_their_caps() {
    let skel = skeleton();
    let (forest, rest) = at_rest(&skel);
    let jobs = JobSystem::new(1).unwrap();
    let params = SelfCollisionParams::default();
    let (lower, upper) = outer_segments(&forest, &rest);
    let pressed = swung_down(&forest, &rest, upper, 0.02);
    let n = forest.segment_count();
    let mut plain = SelfCollision::new(&forest, &rest, params).unwrap();
    let held = |caps: Vec<f32>| {
        SelfCollision::new(&forest, &rest, params)
            .unwrap()
            .with_holding()
            .with_hold_caps(&forest, caps)
    };
    // The lower segment's cap binds (the upper's is larger); the other segments have none.
    let cap = 3.0;
    let mut caps = vec![f32::INFINITY; n];
    caps[lower] = cap;
    caps[upper] = 10.0 * cap;
    let mut capped = held(caps).unwrap();
    let mut free = held(vec![f32::INFINITY; n]).unwrap();
    let push = |sc: &mut SelfCollision, pose: &Pose| {
        let mut forces = vec![Vec3::ZERO; n];
        sc.step(&jobs, &forest, pose, 1.0 / 60.0, &mut forces);
        forces[upper].length()
    };
    for sc in [&mut plain, &mut capped, &mut free] {
        push(sc, &rest);
        push(sc, &pressed);
    }
    let mut last = (0.0, 0.0);
    for _ in 0..200 {
        let p = push(&mut plain, &pressed);
        last = (push(&mut capped, &pressed) - p, push(&mut free, &pressed) - p);
        assert!(
            last.0 <= cap * (1.0 + 1e-4) + 1e-4,
            "held {} over its cap {cap}",
            last.0
        );
    }
    assert!(
        (last.0 - cap).abs() < 1e-3 * cap,
        "held {} against the cap {cap}",
        last.0
    );
    assert!(last.1 > 10.0 * cap, "uncapped, the held force grows on: {}", last.1);
    let wrong = [vec![1.0; n - 1], vec![-1.0; n], vec![f32::NAN; n]];
    for caps in wrong {
        let err = held(caps).unwrap_err().to_string();
        assert!(err.contains("held-force cap"), "{err}");
    }
}

/// With the transfer (`with_transfer`, Chen Fig. 5.3 and Eq. 5.2), a pair's force reaches
/// every segment from the one it acts on to the pair's common ancestor, weighted P2 on the
/// segment and falling linearly towards the ancestor, which takes none; P1 rises from the
/// segment to 1 there. The upper branch's outer segment pressed onto the lower's: their
/// common ancestor is the trunk's first segment, three segments up the one side and two up
/// the other. Weights outside 0 to 1 are refused.
#[test]
fn a_pairs_force_is_passed_on_to_its_common_ancestor() {
    let skel = skeleton();
    let (forest, rest) = at_rest(&skel);
    let jobs = JobSystem::new(1).unwrap();
    let params = SelfCollisionParams::default();
    let (lower, upper) = outer_segments(&forest, &rest);
    // Up the tree from each: the branches' first segments, the trunk's two.
    let up = |i: usize| forest.seg.parent[i] as usize;
    let (upper_branch, lower_branch) = (up(upper), up(lower));
    let (upper_trunk, trunk) = (up(upper_branch), up(lower_branch));
    assert_eq!(up(upper_trunk), trunk);
    let pressed = swung_down(&forest, &rest, upper, 0.02);
    let (p1, p2) = (0.4, 0.8);
    let mut plain = SelfCollision::new(&forest, &rest, params).unwrap();
    let mut passed = SelfCollision::new(&forest, &rest, params)
        .unwrap()
        .with_transfer(&forest, (p1, p2))
        .unwrap();
    let n = forest.segment_count();
    let run = |sc: &mut SelfCollision| {
        let mut forces = vec![Vec3::ZERO; n];
        sc.step(&jobs, &forest, &rest, 1.0 / 60.0, &mut forces);
        let mut forces = vec![Vec3::ZERO; n];
        sc.step(&jobs, &forest, &pressed, 1.0 / 60.0, &mut forces);
        forces
    };
    let (f, g) = (run(&mut plain), run(&mut passed));
    let push = f[upper];
    assert!(push.length() > 0.0 && f[lower] == -push, "{f:?}");
    let expect = [
        (upper, p2, p1),
        (upper_branch, p2 * 2.0 / 3.0, p1 + (1.0 - p1) / 3.0),
        (upper_trunk, p2 / 3.0, p1 + (1.0 - p1) * 2.0 / 3.0),
        (lower, -p2, p1),
        (lower_branch, -p2 / 2.0, p1 + (1.0 - p1) / 2.0),
        (trunk, 0.0, 1.0),
    ];
    let w = passed.original_weights();
    for (seg, share, original) in expect {
        assert!(
            (g[seg] - push * share).length() < 1e-5 * push.length(),
            "segment {seg}: {} against {}",
            g[seg],
            push * share
        );
        assert!(
            (w[seg] - original).abs() < 1e-6,
            "segment {seg}: P1 {} against {original}",
            w[seg]
        );
    }
    assert!(plain.original_weights().is_empty());
    for bad in [(1.5, 1.0), (0.5, -0.1), (f32::NAN, 1.0)] {
        let err = SelfCollision::new(&forest, &rest, params)
            .unwrap()
            .with_transfer(&forest, bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("Eq. 5.2"), "{err}");
    }
}

/// Contacts made ahead (`with_contacts_ahead`) hold a leaf's pair from as far as it may
/// close in the step: a stem swinging down onto a leaf 8 cm in a step gets a strips'
/// contact while still 12 cm above the blade (outside its 4 cm rest length: a stem's
/// radius and a skin), where plain contacts wait until it is inside; the same stem
/// creeping down 1 cm a step gets none there either way.
#[test]
fn contacts_made_ahead_hold_a_pair_closing_fast() {
    let mut skel = skeleton();
    // A blade 10 cm long standing up from the lower outer segment, under the upper outer
    // segment's tip once that swings down.
    skel.leaves.push(SkeletonLeaf {
        segment: 3,
        along: 1.0,
        orientation: Quat::IDENTITY,
        length: 0.1,
        width: 0.04,
    });
    let (forest, rest) = at_rest(&skel);
    let jobs = JobSystem::new(1).unwrap();
    let upper = (0..forest.segment_count())
        .find(|&i| (rest.base[i] - Vec3::new(1.0, 2.0, 0.0)).length() < 1e-4)
        .unwrap();
    let swung = |gap: f32| swung_down(&forest, &rest, upper, gap);
    let strips = |ahead: bool, from: f32| {
        let sc = SelfCollision::new(&forest, &rest, SelfCollisionParams::default()).unwrap();
        let mut sc = if ahead {
            sc.with_contacts_ahead()
        } else {
            sc.with_contacts()
        };
        let mut forces = vec![Vec3::ZERO; forest.segment_count()];
        for pose in [rest.clone(), swung(from), swung(0.22)] {
            sc.step(&jobs, &forest, &pose, 1.0 / 60.0, &mut forces);
        }
        let with_upper = |c: &&Contact| c.strips && c.seg.contains(&(upper as u32));
        sc.contacts().iter().filter(with_upper).copied().collect::<Vec<_>>()
    };
    let fast = strips(true, 0.30);
    assert_eq!(fast.len(), 1, "{fast:?}");
    let c = fast[0];
    let gap = (c.at[0] - c.at[1]).dot(c.dir);
    assert!((gap - 0.12).abs() < 0.01 && (c.rest - 0.04).abs() < 1e-4, "{c:?}");
    assert!(strips(false, 0.30).is_empty());
    assert!(strips(true, 0.23).is_empty());
}

/// A segment that no longer hangs from its tree takes no part, with everything beyond it:
/// the pair pushed together above answers nothing once the upper segment broke off, and
/// answers again once it is back.
#[test]
fn a_piece_broken_off_takes_no_part() {
    let skel = skeleton();
    let (forest, rest) = at_rest(&skel);
    let jobs = JobSystem::new(1).unwrap();
    let mut sc = SelfCollision::new(&forest, &rest, SelfCollisionParams::default()).unwrap();
    let (_, upper) = outer_segments(&forest, &rest);
    let pose = swung_down(&forest, &rest, upper, 0.02);
    let dt = 1.0 / 60.0;
    for (attached, answers) in [(false, false), (true, true)] {
        sc.set_attached(&forest, |i| attached || i != upper);
        let mut forces = vec![Vec3::ZERO; forest.segment_count()];
        sc.step(&jobs, &forest, &rest, dt, &mut forces);
        sc.step(&jobs, &forest, &pose, dt, &mut forces);
        let mine = |&(_, p, q): &(usize, u32, u32)| {
            [p, q]
                .iter()
                .any(|&x| sc.trees[0].pieces[x as usize].owner.segment() as usize == upper)
        };
        assert_eq!(sc.candidates().iter().any(mine), answers, "attached {attached}");
        assert_eq!(forces[upper] != Vec3::ZERO, answers, "attached {attached}: {forces:?}");
    }
}

/// A safe distance that reaches across the whole tree makes every unconnected pair a
/// candidate: past the pair limit the step keeps and answers none, says so, and does the
/// same on one and two workers; under the limit the same tree answers as usual.
#[test]
fn too_many_pairs_are_refused_not_stored() {
    let skel = crate::testtree::test_tree(2, 120, 150).unwrap();
    let (forest, rest) = at_rest(&skel);
    let params = SelfCollisionParams {
        extra_safe: MAX_EXTRA_SAFE,
        count_interpenetrating: true,
        ..SelfCollisionParams::default()
    };
    let all = {
        let jobs = JobSystem::new(1).unwrap();
        let mut sc = SelfCollision::new(&forest, &rest, params).unwrap();
        let mut forces = vec![Vec3::ZERO; forest.segment_count()];
        sc.step(&jobs, &forest, &rest, 1.0 / 60.0, &mut forces);
        assert!(!sc.stats().overflow);
        sc.stats().candidates
    };
    assert!(all > 10_000, "a metre of safe distance reaches every pair: {all}");
    for threads in [1, 2] {
        let jobs = JobSystem::new(threads).unwrap();
        let mut sc = SelfCollision::new(&forest, &rest, params)
            .unwrap()
            .with_pair_limit(all - 1);
        let mut forces = vec![Vec3::ZERO; forest.segment_count()];
        sc.step(&jobs, &forest, &rest, 1.0 / 60.0, &mut forces);
        let s = sc.stats();
        assert!(s.overflow, "{threads}: {s:?}");
        assert_eq!((s.candidates, s.responding, s.close_pairs), (0, 0, 0), "{threads}");
        assert!(sc.candidates().is_empty());
        assert!(forces.iter().all(|f| *f == Vec3::ZERO));
    }
}
