func.func public @main(%arg0: tensor<2x3xf32> {mhlo.layout_mode = "{0,1}"}) -> (tensor<2x3xf32> {mhlo.layout_mode = "default"}) {
  %0 = "stablehlo.add"(%arg0, %arg0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
