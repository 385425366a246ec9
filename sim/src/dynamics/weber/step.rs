//! The plumbing of Weber's step: each tree's slices of the forest-wide arrays, the two job
//! graphs (whole trees as jobs, or phase by phase with planes and subtrees as jobs), and the
//! phases each job runs (populate, solve and integrate, kinematics). The physics the phases
//! call is in `kernels` and `articulated`; the state they share is `Shared` (in `mod.rs`).
//!
//! Invariant: a job touches only its own tree's slices (or its plane's, or its subtree's), so
//! the result never depends on the number of workers.

use super::*;

pub(super) fn seg_range(sh: &Shared, t: usize) -> std::ops::Range<usize> {
    let r = &sh.forest.trees[t].segments;
    r.start as usize..r.end as usize
}

pub(super) fn leaf_range(sh: &Shared, t: usize) -> std::ops::Range<usize> {
    let r = &sh.forest.trees[t].leaves;
    r.start as usize..r.end as usize
}

pub(super) fn tree_static(sh: &Shared, t: usize) -> TreeStatic<'_> {
    let tree = &sh.forest.trees[t];
    let r = seg_range(sh, t);
    let l = leaf_range(sh, t);
    let s = &sh.forest.seg;
    let (mass, inertia, stiffness, damping, drag, leaf_drag) = match &sh.live {
        Some(l) => (&l.mass, &l.inertia, &l.stiffness, &l.damping, &l.drag, &l.leaf_drag),
        None => (&s.mass, &s.inertia, &s.stiffness, &s.damping, &s.drag, &s.leaf_drag),
    };
    TreeStatic {
        offset: tree.segments.start,
        leaf_offset: tree.leaves.start,
        root: tree.root,
        reach: tree.reach,
        parent: &s.parent[r.clone()],
        length: &s.length[r.clone()],
        radius_base: &s.radius_base[r.clone()],
        radius_tip: &s.radius_tip[r.clone()],
        mass: &mass[r.clone()],
        inertia: &inertia[r.clone()],
        rest: [&s.rest[0][r.clone()], &s.rest[1][r.clone()]],
        stiffness: &stiffness[r.clone()],
        damping: &damping[r.clone()],
        drag: &drag[r.clone()],
        leaf_drag: &leaf_drag[r.clone()],
        material: &sh.forest.material,
        leaf_start: &s.leaf_start[r.start..r.end + 1],
        leaf_along: &sh.forest.leaf.along[l],
        inv_pivot: sh.inv_pivot.get(r.clone()).unwrap_or(&[]),
        rest_dir: if sh.params.inertia == InertiaKind::Articulated {
            [
                sh.rest_dir[0].get(r.clone()).unwrap_or(&[]),
                sh.rest_dir[1].get(r.clone()).unwrap_or(&[]),
            ]
        } else {
            [&[], &[]]
        },
        first: sh.first.get(r.clone()).unwrap_or(&[]),
        second: sh.second.get(r.clone()).unwrap_or(&[]),
        fac: [
            sh.fac[0].get(r.clone()).unwrap_or(&[]),
            sh.fac[1].get(r.clone()).unwrap_or(&[]),
        ],
        external: sh.external.get(r.clone()).unwrap_or(&[]),
        pull: sh.pull.get(r).unwrap_or(&[]),
    }
}

pub(super) fn plane_mut(p: &mut PlaneState, r: std::ops::Range<usize>) -> PlaneMut<'_> {
    PlaneMut {
        theta: &mut p.theta[r.clone()],
        vel: &mut p.vel[r.clone()],
        y: &mut p.y[r.clone()],
        rhs: &mut p.rhs[r.clone()],
        stiff: &mut p.stiff[r],
    }
}

pub(super) fn pose_ref<'a>(
    p: &'a Pose,
    dir: &'a Directions,
    r: std::ops::Range<usize>,
    leaves: std::ops::Range<usize>,
) -> PoseRef<'a> {
    PoseRef {
        base: &p.base[r.clone()],
        orient: &p.orient[r.clone()],
        dir: [&dir[0][r.clone()], &dir[1][r]],
        leaf_pos: &p.leaf_pos[leaves],
    }
}

pub(super) fn solve_work(c: &mut CgBuffers, r: std::ops::Range<usize>) -> SolveWork<'_> {
    let CgBuffers {
        x,
        r: res,
        p,
        ap,
        tmp,
        mp,
        acc,
        rho,
        fac,
        blocks,
        pivot,
        ..
    } = c;
    let cg = (!x.is_empty()).then(|| CgWork {
        x: &mut x[r.clone()],
        r: &mut res[r.clone()],
        p: &mut p[r.clone()],
        ap: &mut ap[r.clone()],
        tmp: tmp.get_mut(r.clone()).unwrap_or(&mut []),
        mp: mp.get_mut(r.clone()).unwrap_or(&mut []),
    });
    SolveWork {
        cg,
        acc: acc.get_mut(r.clone()).unwrap_or(&mut []),
        rho: rho.get_mut(r.clone()).unwrap_or(&mut []),
        fac: fac.get_mut(r.clone()).unwrap_or(&mut []),
        blocks: blocks.get_mut(r.clone()).unwrap_or(&mut []),
        pivot: pivot.get_mut(r).unwrap_or(&mut []),
    }
}

fn tree_lengths(sh: &Shared) -> impl Iterator<Item = usize> + '_ {
    sh.forest.trees.iter().map(|t| t.segments.len())
}

fn planes_per_tree<'a>(p: &'a mut PlaneState, sh: &Shared) -> Vec<PlaneMut<'a>> {
    let th = split_lengths(&mut p.theta, tree_lengths(sh));
    let v = split_lengths(&mut p.vel, tree_lengths(sh));
    let y = split_lengths(&mut p.y, tree_lengths(sh));
    let r = split_lengths(&mut p.rhs, tree_lengths(sh));
    let s = split_lengths(&mut p.stiff, tree_lengths(sh));
    th.into_iter()
        .zip(v)
        .zip(y)
        .zip(r.into_iter().zip(s))
        .map(|(((theta, vel), y), (rhs, stiff))| PlaneMut {
            theta,
            vel,
            y,
            rhs,
            stiff,
        })
        .collect()
}

/// The kinematics view of every tree: Θ read-only (whole forest), and per tree a `Part` with its
/// pose, leaves, y and velocities.
pub(super) fn parts_per_tree<'a>(
    pose: &'a mut Pose,
    dir: &'a mut Directions,
    pa: &'a mut PlaneState,
    pz: &'a mut PlaneState,
    sh: &Shared,
) -> ([&'a [f32]; 2], Vec<Part<'a>>) {
    let PlaneState {
        theta: tha,
        vel: va,
        y: ya,
        ..
    } = pa;
    let PlaneState {
        theta: thz,
        vel: vz,
        y: yz,
        ..
    } = pz;
    let [d0, d1] = dir;
    let base = split_lengths(&mut pose.base, tree_lengths(sh));
    let orient = split_lengths(&mut pose.orient, tree_lengths(sh));
    let dx = split_lengths(d0, tree_lengths(sh));
    let dz = split_lengths(d1, tree_lengths(sh));
    let lp = split_lengths(&mut pose.leaf_pos, sh.forest.trees.iter().map(|t| t.leaves.len()));
    let ya = split_lengths(ya, tree_lengths(sh));
    let yz = split_lengths(yz, tree_lengths(sh));
    let va = split_lengths(va, tree_lengths(sh));
    let vz = split_lengths(vz, tree_lengths(sh));
    let parts = base
        .into_iter()
        .zip(orient)
        .zip(dx.into_iter().zip(dz))
        .zip(lp)
        .zip(ya.into_iter().zip(yz))
        .zip(va.into_iter().zip(vz))
        .map(|(((((base, orient), (x, z)), leaf_pos), (y0, y1)), (v0, v1))| Part {
            base,
            orient,
            dir: [x, z],
            leaf_pos,
            y: [y0, y1],
            vel: [v0, v1],
        })
        .collect();
    ([&**tha, &**thz], parts)
}

/// Splits a buffer per tree; an empty buffer gives an empty piece to every tree.
fn per_tree_or_empty<'a, T>(v: &'a mut [T], sh: &Shared) -> Vec<&'a mut [T]> {
    if v.is_empty() {
        (0..sh.forest.tree_count()).map(|_| <&mut [T]>::default()).collect()
    } else {
        split_lengths(v, tree_lengths(sh))
    }
}

fn cg_per_tree<'a>(c: &'a mut CgBuffers, sh: &Shared) -> Vec<SolveWork<'a>> {
    let CgBuffers {
        x,
        r,
        p,
        ap,
        tmp,
        mp,
        acc,
        rho,
        fac,
        blocks,
        pivot,
    } = c;
    let (fac, blocks, pivot) = (
        per_tree_or_empty(fac, sh),
        per_tree_or_empty(blocks, sh),
        per_tree_or_empty(pivot, sh),
    );
    let (x, r, p, ap) = (
        per_tree_or_empty(x, sh),
        per_tree_or_empty(r, sh),
        per_tree_or_empty(p, sh),
        per_tree_or_empty(ap, sh),
    );
    let (tmp, mp) = (per_tree_or_empty(tmp, sh), per_tree_or_empty(mp, sh));
    let (acc, rho) = (per_tree_or_empty(acc, sh), per_tree_or_empty(rho, sh));
    x.into_iter()
        .zip(r)
        .zip(p)
        .zip(ap)
        .zip(tmp.into_iter().zip(mp))
        .zip(acc.into_iter().zip(rho))
        .zip(fac.into_iter().zip(blocks).zip(pivot))
        .map(
            |((((((x, r), p), ap), (tmp, mp)), (acc, rho)), ((fac, blocks), pivot))| {
                let cg = (!x.is_empty()).then_some(CgWork { x, r, p, ap, tmp, mp });
                SolveWork {
                    cg,
                    acc,
                    rho,
                    fac,
                    blocks,
                    pivot,
                }
            },
        )
        .collect()
}

/// Runs `f` and adds its duration to phase `k`.
#[inline]
pub(super) fn timed<R>(sh: &Shared, k: usize, f: impl FnOnce() -> R) -> R {
    let t0 = Instant::now();
    let r = f();
    sh.phase_ns[k].fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    r
}

/// Populate for one tree, for a step of `h`. A varying wind is sampled first, at every segment
/// centre and (with `at_leaves`) every leaf in two calls (`WindField::sample_in_place` and
/// `sample_into`), into `wind`; without `at_leaves` each leaf takes the wind at its segment's
/// centre, as in a uniform wind (the wind-field level of detail of a tree small on screen:
/// a leaf hangs within about a segment's length of that centre, under one cell of the grid).
#[allow(clippy::too_many_arguments)]
pub(super) fn populate_tree(
    sh: &Shared,
    ts: &TreeStatic<'_>,
    planes: [&mut PlaneMut<'_>; 2],
    pose: PoseRef<'_>,
    load: &mut [SegLoad],
    wind: &mut WindScratch<'_>,
    h: f32,
    at_leaves: bool,
) {
    let g = sh.params.gravity;
    let gamma = sh.params.integrator.gamma();
    match sh.wind.uniform() {
        Some(w) => kernels::populate(ts, planes, pose, load, h, gamma, g, None, |_| w),
        None => {
            kernels::segment_centres(ts, pose, wind.centre);
            sh.wind.sample_in_place(wind.centre);
            let leaf = if at_leaves {
                sh.wind.sample_into(pose.leaf_pos, wind.leaf);
                Some(&*wind.leaf)
            } else {
                None
            };
            let centre = &*wind.centre;
            kernels::populate(ts, planes, pose, load, h, gamma, g, leaf, |i| centre[i])
        }
    }
}

/// Per tree, its part of the wind sample buffers: sized to the forest for a varying wind,
/// empty for a uniform one (which populate reads without sampling).
pub(super) fn wind_per_tree<'a>(
    centre: &'a mut Vec<Vec3>,
    leaf: &'a mut Vec<Vec3>,
    sh: &Shared,
) -> Vec<WindScratch<'a>> {
    if sh.wind.uniform().is_some() {
        return (0..sh.forest.tree_count())
            .map(|_| WindScratch {
                centre: &mut [],
                leaf: &mut [],
            })
            .collect();
    }
    centre.resize(sh.forest.segment_count(), Vec3::ZERO);
    leaf.resize(sh.forest.leaf_count(), Vec3::ZERO);
    let c = split_lengths(centre, tree_lengths(sh));
    let l = split_lengths(leaf, sh.forest.trees.iter().map(|t| t.leaves.len()));
    c.into_iter()
        .zip(l)
        .map(|(centre, leaf)| WindScratch { centre, leaf })
        .collect()
}

/// Whether A gains a diagonal each step and is factored for that step (Newmark's load
/// stiffness, the quadratic drag law's aerodynamic damping; see [`solve_plane`]).
pub(super) fn refactors_every_step(sh: &Shared) -> bool {
    sh.params.integrator == IntegratorKind::Newmark || sh.forest.material.drag_law == DragLaw::Quadratic
}

/// Tree `t`'s step this step \[s\]: `dt`, or a multiple of it under a temporal level of detail
/// (0 when the tree holds this step; see `StepSchedule`).
pub(super) fn tree_dt(sh: &Shared, t: usize) -> f32 {
    match sh.schedule.steps_of(t) {
        1 => sh.params.dt,
        k => k as f32 * sh.params.dt,
    }
}

/// Whether tree `t` steps this step.
fn steps_now(sh: &Shared, t: usize) -> bool {
    sh.schedule.steps_of(t) > 0
}

/// Whether tree `t`'s leaves sample a varying wind where they are: at full rate (period 1); a
/// tree stepping less often is small on screen and its leaves take their segment's wind.
fn wind_at_leaves(sh: &Shared, t: usize) -> bool {
    sh.schedule.periods()[t] == 1
}

/// Whether a step of `dt` factors A for itself: always when A changes every step, and for a
/// step other than the one `prepare_solver` factored A for.
fn refactors(sh: &Shared, dt: f32) -> bool {
    refactors_every_step(sh) || dt != sh.params.dt
}

/// Solves plane `k` of one tree for a step of `dt`, leaving Δv in `rhs`.
pub(super) fn solve_plane(
    sh: &Shared,
    ts: &TreeStatic<'_>,
    k: usize,
    pl: &mut PlaneMut<'_>,
    work: SolveWork<'_>,
    dt: f32,
) {
    // Newmark and the semi-implicit step share the matrix form with h scaled by γ.
    let h = sh.params.integrator.gamma() * dt;
    // Newmark adds the step's load stiffness S (`PlaneMut::stiff`) to the matrix: A gains
    // (γh)²·S on its diagonal and is factored for this step; otherwise A is constant and was
    // factored in `prepare_solver`.
    // The quadratic drag law adds its aerodynamic damping to the diagonal the same way
    // (`kernels::populate` stores it in `stiff` scaled to sit beside S: γh·D = (γh)²·D/(γh)).
    let newmark = refactors(sh, dt);
    // `stiff` holds this step's diagonal only where populate wrote one.
    let extra = if refactors_every_step(sh) { &*pl.stiff } else { &[] };
    let h2 = (h as f64) * (h as f64);
    match (sh.params.solver, work.cg) {
        (SolverKind::Cg, Some(cg)) => {
            let r = ts.offset as usize..ts.offset as usize + ts.len();
            let it = kernels::solve_cg(
                ts,
                pl.rhs,
                h,
                &sh.cg_scale[k][r],
                sh.params.cg_tolerance,
                sh.params.cg_max_iterations,
                ts.mass_view(k),
                (extra, h2),
                cg,
            );
            sh.cg_iterations.fetch_add(it as u64, Ordering::Relaxed);
            sh.cg_solves.fetch_add(1, Ordering::Relaxed);
        }
        _ => match ts.mass_view(k) {
            Some(m) if newmark => {
                let e = articulated::Elimination {
                    u: m.u,
                    extra,
                    rhs: &mut *pl.rhs,
                    blocks: work.blocks,
                    out: work.fac,
                    acc: work.acc,
                };
                articulated::factor_solve(ts, h, h2, e)
            }
            Some(m) => articulated::solve(ts, m.u, ts.fac[k], pl.rhs, work.acc, work.rho),
            None if newmark => {
                kernels::diagonal(ts, h, |i| ts.inertia[i] as f64, work.pivot);
                for (d, s) in work.pivot.iter_mut().zip(extra) {
                    *d += h2 * *s as f64;
                }
                kernels::factor(ts, h, work.pivot);
                kernels::solve_direct(ts, work.pivot, pl.rhs, h)
            }
            None => kernels::solve_direct(ts, ts.inv_pivot, pl.rhs, h),
        },
    }
}

fn solve_and_integrate(
    sh: &Shared,
    ts: &TreeStatic<'_>,
    k: usize,
    pl: &mut PlaneMut<'_>,
    work: SolveWork<'_>,
    dt: f32,
) {
    solve_plane(sh, ts, k, pl, work, dt);
    if !kernels::integrate(pl, dt, sh.params.integrator.gamma()) {
        sh.nonfinite.store(true, Ordering::Relaxed);
    }
}

fn contacts_for<'a>(sh: &'a Shared, ts: &TreeStatic<'_>) -> Contacts<'a> {
    let params = ContactParams {
        passes: sh.params.contact_passes,
        stiffness: sh.params.contact_stiffness,
    };
    Contacts::near(ts, &sh.colliders, params)
}

/// A whole step of one tree, as one job.
#[allow(clippy::too_many_arguments)]
fn step_tree<'a>(
    sh: &Shared,
    t: usize,
    mut px: PlaneMut<'a>,
    mut pz: PlaneMut<'a>,
    pose: PoseParts<'a>,
    load: &mut [SegLoad],
    mut wind: WindScratch<'_>,
    work: [SolveWork<'_>; 2],
) {
    let ts = tree_static(sh, t);
    let dt = tree_dt(sh, t);
    let PoseParts {
        base,
        orient,
        dir,
        leaf_pos,
    } = pose;
    timed(sh, POPULATE, || {
        let pr = PoseRef {
            base,
            orient,
            dir: [&*dir[0], &*dir[1]],
            leaf_pos: &*leaf_pos,
        };
        populate_tree(
            sh,
            &ts,
            [&mut px, &mut pz],
            pr,
            load,
            &mut wind,
            dt,
            wind_at_leaves(sh, t),
        )
    });
    let [wx, wz] = work;
    timed(sh, SOLVE, || {
        // The direct solver with the articulated inertia solves both planes in one walk of the
        // tree (factoring A in the same walk when it changes every step); the per-phase graph
        // solves them apart, with the same bits.
        let direct = sh.params.solver == SolverKind::Direct && ts.mass_view(0).is_some();
        let refactor = refactors(sh, dt);
        if direct {
            if refactor {
                let gh = sh.params.integrator.gamma() * dt;
                let h2 = (gh as f64) * (gh as f64);
                // A scratch of the pool (one per job at a time; the pool grows only when more
                // jobs run at once than it was made for). Its content never changes a result.
                let mut scratch = sh
                    .pair_pool
                    .lock()
                    .expect("solver scratch pool poisoned by a panic in an earlier step")
                    .pop()
                    .unwrap_or_else(|| articulated::PairScratch::new(ts.len()));
                scratch.fit(ts.len());
                // `stiff` holds this step's diagonal only where populate wrote one.
                let extra: [&[f32]; 2] = if refactors_every_step(sh) {
                    [&*px.stiff, &*pz.stiff]
                } else {
                    [&[], &[]]
                };
                let pair = articulated::Pair {
                    u: ts.rest_dir,
                    extra,
                    rhs: [&mut *px.rhs, &mut *pz.rhs],
                    slots: &mut scratch.slots,
                    held: &mut scratch.held,
                };
                articulated::factor_solve_pair(&ts, gh, h2, pair);
                sh.pair_pool
                    .lock()
                    .expect("solver scratch pool poisoned by a panic in an earlier step")
                    .push(scratch);
            } else {
                articulated::solve_both(
                    &ts,
                    ts.rest_dir,
                    ts.fac,
                    [&mut *px.rhs, &mut *pz.rhs],
                    [wx.acc, wz.acc],
                    [wx.rho, wz.rho],
                );
            }
            for pl in [&mut px, &mut pz] {
                if !kernels::integrate(pl, dt, sh.params.integrator.gamma()) {
                    sh.nonfinite.store(true, Ordering::Relaxed);
                }
            }
        } else {
            solve_and_integrate(sh, &ts, 0, &mut px, wx, dt);
            solve_and_integrate(sh, &ts, 1, &mut pz, wz, dt);
        }
    });
    timed(sh, KINEMATICS, || {
        let [d0, d1] = dir;
        let mut part = Part {
            base,
            orient,
            dir: [d0, d1],
            leaf_pos,
            y: [&mut *px.y, &mut *pz.y],
            vel: [px.vel, pz.vel],
        };
        let contacts = contacts_for(sh, &ts);
        let c = kernels::kinematics(&ts, [&*px.theta, &*pz.theta], 0, ts.len(), None, &mut part, &contacts);
        sh.corrections.fetch_add(c as u64, Ordering::Relaxed);
        // Breakage: once per step, after the solve and the contacts (`rupture`).
        let over = rupture::over_limit(
            &ts,
            [&*px.theta, &*pz.theta],
            [&*px.y, &*pz.y],
            &sh.limit[seg_range(sh, t)],
        );
        sh.over[t].store(over, Ordering::Relaxed);
    });
}

/// One tree's pose arrays.
struct PoseParts<'a> {
    base: &'a mut [Vec3],
    orient: &'a mut [Quat],
    dir: [&'a mut [Vec3]; 2],
    leaf_pos: &'a mut [Vec3],
}

fn pose_parts_per_tree<'a>(p: &'a mut Pose, dir: &'a mut Directions, sh: &Shared) -> Vec<PoseParts<'a>> {
    let [d0, d1] = dir;
    let base = split_lengths(&mut p.base, tree_lengths(sh));
    let orient = split_lengths(&mut p.orient, tree_lengths(sh));
    let dx = split_lengths(d0, tree_lengths(sh));
    let dz = split_lengths(d1, tree_lengths(sh));
    let lp = split_lengths(&mut p.leaf_pos, sh.forest.trees.iter().map(|t| t.leaves.len()));
    base.into_iter()
        .zip(orient)
        .zip(dx.into_iter().zip(dz))
        .zip(lp)
        .map(|(((base, orient), (x, z)), leaf_pos)| PoseParts {
            base,
            orient,
            dir: [x, z],
            leaf_pos,
        })
        .collect()
}

/// The graph for forests: one job per tree runs the whole step.
pub(super) fn per_tree_graph() -> JobGraph<Shared> {
    let mut b = JobGraphBuilder::new();
    b.add("trees", &[], |sh: &Shared, jobs: &JobSystem| {
        let [a, z] = &sh.planes;
        let (mut pa, mut pz) = (lock(a), lock(z));
        let (mut pose, mut dir) = (lock(&sh.pose), lock(&sh.dir));
        let mut scratch = lock(&sh.scratch);
        let [ca, cz] = &sh.cg;
        let (mut ca, mut cz) = (lock(ca), lock(cz));
        let xs = planes_per_tree(&mut pa, sh);
        let zs = planes_per_tree(&mut pz, sh);
        let poses = pose_parts_per_tree(&mut pose, &mut dir, sh);
        let Scratch {
            load,
            centre_wind,
            leaf_wind,
        } = &mut *scratch;
        let loads = split_lengths(load, tree_lengths(sh));
        let winds = wind_per_tree(centre_wind, leaf_wind, sh);
        let cgx = cg_per_tree(&mut ca, sh);
        let cgz = cg_per_tree(&mut cz, sh);
        let work = xs
            .into_iter()
            .zip(zs)
            .zip(poses)
            .zip(loads.into_iter().zip(winds))
            .zip(cgx.into_iter().zip(cgz));
        jobs.scope(|s| {
            for (t, ((((px, pz), pose), (load, wind)), (cx, cz))) in work.enumerate() {
                // A tree holding this step (temporal level of detail) keeps its state and pose.
                if steps_now(sh, t) {
                    s.spawn(move |_| step_tree(sh, t, px, pz, pose, load, wind, [cx, cz]));
                }
            }
        });
    });
    b.build().expect("the per-tree step graph is well formed")
}

/// The graph for a few trees: phases as jobs, the two planes in parallel, kinematics as a queue
/// of subtree jobs after the top of each tree.
pub(super) fn per_phase_graph() -> JobGraph<Shared> {
    let mut b = JobGraphBuilder::new();
    b.add("populate", &[], |sh: &Shared, jobs: &JobSystem| {
        let [a, z] = &sh.planes;
        let (mut pa, mut pz) = (lock(a), lock(z));
        let (pose, dir) = (lock(&sh.pose), lock(&sh.dir));
        let mut scratch = lock(&sh.scratch);
        let xs = planes_per_tree(&mut pa, sh);
        let zs = planes_per_tree(&mut pz, sh);
        let Scratch {
            load,
            centre_wind,
            leaf_wind,
        } = &mut *scratch;
        let loads = split_lengths(load, tree_lengths(sh));
        let winds = wind_per_tree(centre_wind, leaf_wind, sh);
        let (pose, dir) = (&*pose, &*dir);
        jobs.scope(|s| {
            for (t, ((mut px, mut pz), (load, mut wind))) in
                xs.into_iter().zip(zs).zip(loads.into_iter().zip(winds)).enumerate()
            {
                if !steps_now(sh, t) {
                    continue;
                }
                s.spawn(move |_| {
                    let ts = tree_static(sh, t);
                    let pr = pose_ref(pose, dir, seg_range(sh, t), leaf_range(sh, t));
                    timed(sh, POPULATE, || {
                        let (dt, at_leaves) = (tree_dt(sh, t), wind_at_leaves(sh, t));
                        populate_tree(sh, &ts, [&mut px, &mut pz], pr, load, &mut wind, dt, at_leaves)
                    });
                });
            }
        });
    });
    for (k, name) in [(0usize, "solve_x"), (1, "solve_z")] {
        b.add(name, &["populate"], move |sh: &Shared, jobs: &JobSystem| {
            let mut pl = lock(&sh.planes[k]);
            let mut cg = lock(&sh.cg[k]);
            let planes = planes_per_tree(&mut pl, sh);
            let cgs = cg_per_tree(&mut cg, sh);
            jobs.scope(|s| {
                for (t, (mut p, c)) in planes.into_iter().zip(cgs).enumerate() {
                    if !steps_now(sh, t) {
                        continue;
                    }
                    s.spawn(move |_| {
                        let ts = tree_static(sh, t);
                        timed(sh, SOLVE, || solve_and_integrate(sh, &ts, k, &mut p, c, tree_dt(sh, t)));
                    });
                }
            });
        });
    }
    b.add(
        "kinematics",
        &["solve_x", "solve_z"],
        |sh: &Shared, jobs: &JobSystem| {
            let [a, z] = &sh.planes;
            let (mut pa, mut pz) = (lock(a), lock(z));
            let (mut pose, mut dir) = (lock(&sh.pose), lock(&sh.dir));
            let (theta, parts) = parts_per_tree(&mut pose, &mut dir, &mut pa, &mut pz, sh);
            jobs.scope(|s| {
                for (t, part) in parts.into_iter().enumerate() {
                    if !steps_now(sh, t) {
                        continue;
                    }
                    let r = seg_range(sh, t);
                    let th = [&theta[0][r.clone()], &theta[1][r]];
                    s.spawn(move |s| kinematics_tree(sh, t, th, part, s));
                }
            });
        },
    );
    b.build().expect("the per-phase step graph is well formed")
}

/// Weber's kinematics queue for one tree: the calling job poses the top block, then every group
/// of subtree blocks becomes a job that reads the top's pose and writes only its own segments.
fn kinematics_tree<'s, 'e>(
    sh: &'e Shared,
    t: usize,
    theta: [&'e [f32]; 2],
    part: Part<'e>,
    scope: &'s sylva_engine::Scope<'s, 'e>,
) {
    let ts = tree_static(sh, t);
    let tree = &sh.forest.trees[t];
    let blocks = &sh.forest.blocks[tree.blocks.start as usize..tree.blocks.end as usize];
    let local = |g: u32| (g - tree.segments.start) as usize;
    let leaf_local = |seg: usize| (ts.leaf_start[seg] - ts.leaf_offset) as usize;
    let top_end = local(blocks[0].segments.end);
    let (mut top, mut rest) = part.split_at(top_end, leaf_local(top_end));
    let contacts = contacts_for(sh, &ts);
    timed(sh, KINEMATICS, || {
        let c = kernels::kinematics(&ts, theta, 0, top_end, None, &mut top, &contacts);
        sh.corrections.fetch_add(c as u64, Ordering::Relaxed);
    });
    let top = top.into_done();
    let mut lo = top_end;
    let mut k = 1;
    while k < blocks.len() {
        let mut hi = local(blocks[k].segments.end);
        k += 1;
        while k < blocks.len() && hi - lo < KINEMATICS_JOB_SEGMENTS {
            hi = local(blocks[k].segments.end);
            k += 1;
        }
        let (mut own, after) = rest.split_at(hi - lo, leaf_local(hi) - leaf_local(lo));
        rest = after;
        scope.spawn(move |_| {
            let ts = tree_static(sh, t);
            let contacts = contacts_for(sh, &ts);
            timed(sh, KINEMATICS, || {
                let c = kernels::kinematics(&ts, theta, lo, hi, Some(top), &mut own, &contacts);
                sh.corrections.fetch_add(c as u64, Ordering::Relaxed);
            });
        });
        lo = hi;
    }
}
