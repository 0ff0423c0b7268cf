extension DiskAdaptivePolicy {
    /// Calls `body` with each record held, in ``evictionOrder``'s order (the window's, probation's,
    /// then protected's, each oldest first), until it returns `false`; `body` must not change
    /// the policy.
    /// - Complexity: O(*k*) for the *k* records visited.
    package func forEachInEvictionOrder(_ body: (Int32) -> Bool) {
        for queue in [Self.window, Self.probation, Self.protected] {
            var id = queues.heads[Int(queue)]
            while id != -1 {
                let next = queues.after(id)
                if !body(id) { return }
                id = next
            }
        }
    }
}
