//! Spreads per-benchmark work (bootstrap intervals, charts) over the machine's cores:
//! a report of hundreds of benchmarks should take seconds, not minutes.

/// `f` applied to every item, on up to one thread per core, results in input order.
pub(super) fn map<T, R, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(results) => results,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_input_order() {
        let xs: Vec<u32> = (0..1000).collect();
        let doubled = super::map(&xs, |x| x * 2);
        assert_eq!(doubled, xs.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert!(super::map(&[] as &[u32], |x| *x).is_empty());
    }
}
