; A heredoc folds from its opener line to its terminator.
(heredoc) @fold
