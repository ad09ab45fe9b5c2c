module @jit_f attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %arg1: tensor<24xui8> {customop.external = {descriptor = "d", fingerprint = "0x01", size = 24 : i64}}) -> (tensor<8x4xf32> {jax.result_info = "", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.add %arg0, %arg0 : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
