; A CONTEXT heredoc is text for the model, usually markdown.
((context_instruction
  (heredoc
    (heredoc_body) @injection.content))
  (#set! injection.language "markdown"))

((comment) @injection.content
  (#set! injection.language "comment"))
