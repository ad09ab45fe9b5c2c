// func.func @main(%a: tensor<1xf32>) -> tensor<1xf32>
#alias = #d.attr<"func.func @main(%x: tensor<2xi8>)" // ( >
module attributes {x = "func.func @main()"} {
  func.func private @"main\22"(%a: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> { return %a : tensor<4xcomplex<f32>> }
  func.func @main(%arg0: tensor<1024xf32> loc("x"), %arg1: tensor<f32> {a = !d.t<{-# #-}>}) -> (tensor<1024xf32>, tensor<i1>) {
    %0 = stablehlo.sine %arg0 : tensor<1024xf32>
    %1 = stablehlo.constant dense<true> : tensor<i1>
    return %0, %1 : tensor<1024xf32>, tensor<i1>
  }
}
{-#
  dialect_resources: { builtin: { blob: "0x0400000001" } }
#-}
