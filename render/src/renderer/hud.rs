//! The overlay's content: title, frame rate and counts, simulation and GPU pass times, the
//! simulation state, the wind field legend, the frame-time graph and the key help, laid out
//! as text and bars by [`OverlayBuilder`] into the renderer's overlay vertices.
//!
//! Invariant: it only fills `overlay_vertices` (cleared by the caller each frame); it reads
//! the renderer's timings and statistics and changes nothing else.

use ash::vk;

use super::{DrawOptions, Renderer, GRAPH_FRAMES};
use crate::frame::RenderFrame;
use crate::overlay::OverlayBuilder;

/// Below this many simulated seconds per real second the overlay says the simulation cannot
/// keep up.
const REALTIME_SLOW: f32 = 0.95;

impl Renderer {
    pub(super) fn compose_overlay(&mut self, frame: &RenderFrame, options: &DrawOptions, extent: vk::Extent2D) {
        let mut vertices = std::mem::take(&mut self.overlay_vertices);
        {
            let a = &self.atlas;
            let mut b = OverlayBuilder {
                atlas: a,
                vertices: &mut vertices,
            };
            let white = [255, 255, 255, 255];
            let dim = [200, 210, 220, 255];
            let lh = a.line_height;
            let (x, mut y) = (10.0, 8.0);
            // Text is wrapped to the picture's width (the font is monospaced).
            let columns = ((extent.width as f32 - 2.0 * x) / a.advance).floor().max(1.0) as usize;
            let put = |b: &mut OverlayBuilder<'_>, y: &mut f32, text: &str, colour: [u8; 4]| {
                for line in wrap(text, columns) {
                    b.label(x, *y, &line, colour);
                    *y += lh;
                }
            };
            if !options.help.is_empty() {
                let lines: Vec<String> = options.help.lines().flat_map(|l| wrap(l, columns)).collect();
                let mut hy = extent.height as f32 - 6.0 - lh * lines.len() as f32;
                for line in &lines {
                    b.label(x, hy, line, white);
                    hy += lh;
                }
            }
            if !options.overlay {
                self.overlay_vertices = vertices;
                return;
            }
            let info = &frame.info;
            let title = if info.title.is_empty() {
                "Sylva".to_string()
            } else {
                format!("Sylva · {}", info.title)
            };
            put(&mut b, &mut y, &title, white);
            let drawn: usize = frame.trees_drawn.iter().sum();
            let segs: usize = frame.segments.iter().map(Vec::len).sum();
            let leaves: usize = frame.leaves.iter().map(Vec::len).sum();
            let rate = if self.fps > 0.0 {
                format!("{:5.1} fps {:6.2} ms", self.fps, 1000.0 / self.fps)
            } else {
                "(a single frame)".to_string()
            };
            put(
                &mut b,
                &mut y,
                &format!(
                    "{rate}   trees {} (drawn {} = {}/{}/{} by LOD)   segments {} of {}   leaves {} of {}   draws {}",
                    info.trees,
                    drawn,
                    frame.trees_drawn[0],
                    frame.trees_drawn[1],
                    frame.trees_drawn[2],
                    segs,
                    info.segments,
                    leaves,
                    info.leaves,
                    self.stats.draws
                ),
                white,
            );
            // Each phase's time is its jobs' time added over the worker threads.
            let mut sim = String::from("sim ms (summed over threads) ");
            for (name, _, mean) in &frame.timings.phases {
                sim.push_str(&format!(" {name} {mean:.2}"));
            }
            sim.push_str(&format!("   wait {:.2}", frame.timings.cache_wait_ms));
            put(&mut b, &mut y, &sim, dim);
            let mut g = String::from("gpu ms ");
            if self.gpu_timings.frames() == 0 {
                g.push_str(if self.gpu.timestamps.is_some() {
                    if self.fps > 0.0 {
                        " (waiting for the first frame's timestamps)"
                    } else {
                        " (timed from the frame after this one: a single picture has none)"
                    }
                } else {
                    " (no timestamps on this device)"
                });
            } else {
                for id in self.gpu_timings.phase_ids() {
                    g.push_str(&format!(
                        " {} {:.2}",
                        self.gpu_timings.phase_name(id),
                        self.gpu_timings.last(id).as_secs_f32() * 1e3
                    ));
                }
                g.push_str(&format!(
                    "   total {:.2}",
                    self.gpu_timings.last_wall().as_secs_f32() * 1e3
                ));
            }
            put(&mut b, &mut y, &g, dim);
            let broken = info.breakage.map_or(String::new(), |b| {
                format!(", broken {}, uprooted {}, debris {}", b.broken, b.uprooted, b.debris)
            });
            let leaves = info.falling.map_or(String::new(), |f| {
                format!(", leaves falling {}, on the ground {}", f.falling, f.landed)
            });
            let broken = broken + &leaves;
            let pace = match info.realtime {
                // Below real time: the simulation drops time to keep up with the frames.
                Some(r) if r < REALTIME_SLOW => format!("at {r:.2}× real time (too slow to keep up)"),
                Some(_) => "in real time".to_string(),
                None => "running".to_string(),
            };
            let state = format!(
                "t {:.1} s   {}   model {} ({}{})   wind {:.1} m/s towards {:.0}°   LOD bias {:.1}{}",
                info.sim_time,
                if info.paused { "PAUSED" } else { pace.as_str() },
                info.model,
                info.settings,
                broken,
                info.wind_speed,
                info.wind_heading_deg,
                info.lod_bias,
                if info.message.is_empty() {
                    String::new()
                } else {
                    format!("   {}", info.message)
                }
            );
            put(&mut b, &mut y, &state, dim);
            if let Some(f) = &info.field {
                let field = format!(
                    "wind field: {} arrows on layer {} of {} ({:.1} m up), blue calm to red {:.1} m/s",
                    f.arrows,
                    f.layer + 1,
                    f.layers,
                    f.height,
                    f.max_speed
                );
                put(&mut b, &mut y, &field, dim);
            }
            y += 4.0;
            // Frame graph: render frame interval (grey), GPU time (green), simulation frame (orange).
            let frames: Vec<Vec<f32>> = self.graph.iter().map(|f| vec![f[1], (f[0] - f[1]).max(0.0)]).collect();
            let sims: Vec<Vec<f32>> = self.graph.iter().map(|f| vec![f[2]]).collect();
            let max = self
                .graph
                .iter()
                .map(|f| f[0].max(f[2]))
                .fold(16.7f32, f32::max)
                .min(250.0)
                * 1.1;
            let gw = (GRAPH_FRAMES as f32).min(extent.width as f32 - 20.0).max(10.0);
            b.bars(
                x,
                y,
                gw,
                60.0,
                max,
                &frames,
                &[[90, 200, 110, 230], [150, 150, 150, 200]],
                &[16.7, 33.3],
            );
            b.bars(x, y + 62.0, gw, 24.0, max, &sims, &[[240, 150, 60, 230]], &[16.7, 33.3]);
            b.label(x + gw + 8.0, y, &format!("{max:.0} ms"), dim);
            b.label(x + gw + 8.0, y + lh, "frame", [150, 150, 150, 255]);
            b.label(x + gw + 8.0, y + 2.0 * lh, "gpu", [90, 200, 110, 255]);
            b.label(x + gw + 8.0, y + 62.0, "sim", [240, 150, 60, 255]);
        }
        self.overlay_vertices = vertices;
    }
}

/// `line` broken into lines of at most `columns` characters: between its entries (runs of
/// three spaces separate them, as the help's keys), an entry longer than a line at its single
/// spaces, and a word longer than a line cut where it must be.
fn wrap(line: &str, columns: usize) -> Vec<String> {
    let columns = columns.max(1);
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    // The help's entries are separated by runs of spaces: keep each entry whole.
    for entry in line.split("   ").filter(|e| !e.trim().is_empty()) {
        let entry = entry.trim();
        let joined = if current.is_empty() {
            entry.chars().count()
        } else {
            current.chars().count() + 3 + entry.chars().count()
        };
        if joined <= columns {
            if !current.is_empty() {
                current.push_str("   ");
            }
            current.push_str(entry);
            continue;
        }
        if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        if entry.chars().count() <= columns {
            current = entry.to_string();
            continue;
        }
        // Longer than a line: at single spaces, cutting only a word longer than a line.
        for word in entry.split(' ').filter(|w| !w.is_empty()) {
            let joined = if current.is_empty() {
                word.chars().count()
            } else {
                current.chars().count() + 1 + word.chars().count()
            };
            if joined <= columns {
                if !current.is_empty() {
                    current.push(' ');
                }
                current.push_str(word);
                continue;
            }
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            let chars: Vec<char> = word.chars().collect();
            let mut pieces = chars.chunks(columns).map(|c| c.iter().collect::<String>()).peekable();
            while let Some(piece) = pieces.next() {
                if pieces.peek().is_some() {
                    out.push(piece);
                } else {
                    current = piece;
                }
            }
        }
    }
    if !current.is_empty() || out.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn the_help_wraps_between_its_entries_to_the_width() {
        let help = "drag: orbit   wheel: zoom   C: clear balls   W: wind field   Esc: quit";
        assert_eq!(wrap(help, 200), vec![help.to_string()]);
        let lines = wrap(help, 30);
        assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
        assert_eq!(lines.join("   "), help, "nothing lost, entries whole");
        assert_eq!(lines[0], "drag: orbit   wheel: zoom");
        // An entry longer than a line breaks at its spaces, and a word longer than a line is
        // cut.
        let long = wrap("abcdefghij", 4);
        assert_eq!(long, vec!["abcd", "efgh", "ij"]);
        let status = "t 1.0 s   model weber (direct solver, articulated inertia)   wind 8.0 m/s";
        let lines = wrap(status, 24);
        assert!(lines.iter().all(|l| l.chars().count() <= 24), "{lines:?}");
        assert_eq!(
            lines,
            [
                "t 1.0 s",
                "model weber (direct",
                "solver, articulated",
                "inertia)   wind 8.0 m/s"
            ]
        );
        assert_eq!(wrap("", 10), vec![String::new()]);
    }
}
