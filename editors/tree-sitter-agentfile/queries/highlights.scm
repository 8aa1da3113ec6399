; Highlighting for Agentfiles (capture names follow the common nvim-treesitter/Helix set).

[
  "FROM"
  "RUNTIME"
  "MODEL"
  "NAME"
  "CONTEXT"
  "CONFIG"
  "ENV"
  "BIN"
  "EXEC"
  "ADD"
  "LABEL"
  "ARG"
  "CAPABILITY"
  "MOUNT"
  "EGRESS"
] @keyword

(comment) @comment

(directive) @keyword.directive

(string) @string

(escape_sequence) @string.escape

(expansion) @variable

(file_reference) @string.special.path

(heredoc_body) @string

[
  (heredoc_start)
  (heredoc_end)
] @label

(mount_mode) @keyword.modifier

(required) @operator

"=" @operator

[
  "["
  "]"
] @punctuation.bracket

"," @punctuation.delimiter

; Names an instruction declares or refers to.
(from_instruction
  image: (word) @module)

(runtime_instruction
  image: (word) @module)

(bin_instruction
  image: (word) @module)

(model_instruction
  model: (word) @constant)

(name_instruction
  name: (word) @type)

(context_instruction
  name: (word) @type)

(bin_instruction
  name: (word) @function)

(capability_instruction
  name: (word) @constant)

(arg_instruction
  name: (word) @variable.parameter)

[
  (config_instruction
    key: (word) @property)
  (env_instruction
    key: (word) @property)
  (label_instruction
    key: (word) @property)
]

(mount_instruction
  target: (word) @string.special.path)

(egress_instruction
  destination: (word) @string.special.url)

(egress_instruction
  destination: (bracketed_address) @string.special.url)

(add_instruction
  source: (word) @string.special.path)

(add_instruction
  destination: (word) @string.special.path)
