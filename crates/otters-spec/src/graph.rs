//! The one walk over an image graph: manifests, indexes, their blobs, and (for the store) the
//! referrers of each subject.
//!
//! Takes: roots and a `visit` function that reads one node and returns what it names. Returns:
//! the keys of every node reached. Must never: visit a node twice (a cycle or a diamond in
//! outside content ends; each node is read once) or read anything itself: reading, bounds and
//! validation are the caller's, in `visit`, where it knows what the bytes came from.

use std::collections::BTreeSet;

/// Walks depth first from `roots` (each at depth 0). A node is visited once per `key`, at the
/// depth it was first reached; `visit(node, depth)` returns its children (at `depth + 1`). The
/// first error stops the walk. Returns the keys of the nodes visited.
pub fn walk<N, K: Ord, E>(
    roots: impl IntoIterator<Item = N>,
    key: impl Fn(&N) -> K,
    mut visit: impl FnMut(&N, usize) -> Result<Vec<N>, E>,
) -> Result<BTreeSet<K>, E> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<(N, usize)> = roots.into_iter().map(|n| (n, 0)).collect();
    todo.reverse();
    while let Some((node, depth)) = todo.pop() {
        if !seen.insert(key(&node)) {
            continue;
        }
        let children = visit(&node, depth)?;
        todo.extend(children.into_iter().map(|c| (c, depth + 1)));
    }
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_node_is_visited_once_even_in_a_cycle() {
        // 0 → 1 → 2 → 0, and 0 → 2: a cycle and a diamond.
        let edges = |n: &u8| -> Vec<u8> {
            match n {
                0 => vec![1, 2],
                1 => vec![2],
                2 => vec![0],
                _ => vec![],
            }
        };
        let mut visits = Vec::new();
        let seen = walk(
            [0u8],
            |n| *n,
            |n, _| {
                visits.push(*n);
                Ok::<_, ()>(edges(n))
            },
        )
        .unwrap();
        visits.sort_unstable();
        assert_eq!(visits, [0, 1, 2]);
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn depth_is_where_a_node_was_first_reached_and_errors_stop_the_walk() {
        let mut depths = Vec::new();
        walk(
            [10u32],
            |n| *n,
            |n, d| {
                depths.push((*n, d));
                Ok::<_, ()>(if *n < 13 { vec![n + 1] } else { vec![] })
            },
        )
        .unwrap();
        assert_eq!(depths, [(10, 0), (11, 1), (12, 2), (13, 3)]);
        let mut visited = 0;
        let r = walk(
            [1u32, 2, 3],
            |n| *n,
            |n, _| {
                visited += 1;
                if *n == 2 {
                    Err(format!("bad {n}"))
                } else {
                    Ok(vec![])
                }
            },
        );
        assert_eq!(r.unwrap_err(), "bad 2");
        assert_eq!(
            visited, 2,
            "roots are visited in order; the error stops the walk"
        );
    }
}
