// RUN: loom-opt %s --split-input-file --loom-prepare-entry-points --verify-diagnostics

// A weight inside a private function cannot be passed by the launcher.
func.func private @helper() -> tensor<4xf32> {
  // expected-error @+1 {{weights may only be used in public functions}}
  %w = loom.weight "w" : tensor<4xf32>
  return %w : tensor<4xf32>
}
