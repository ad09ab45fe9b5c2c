//! Programs over a device mesh: each argument split into the shard each device takes, each
//! result assembled from its shards, as the program's Shardy shardings say.

use super::error::RunError;
use super::host::HostTensor;
use super::signature::DimSharding;
use crate::types::{ElementType, TensorType};

/// The mesh coordinates of device `d` (row-major over the axes, as devices are numbered).
fn coords(mesh: &[(String, i64)], d: usize) -> Vec<i64> {
    let mut c = vec![0; mesh.len()];
    let mut rest = d as i64;
    for (i, (_, size)) in mesh.iter().enumerate().rev() {
        c[i] = rest % size;
        rest /= size;
    }
    c
}

/// For one dimension split along `axes`: how many blocks, and device `d`'s block.
fn block(axes: &[String], mesh: &[(String, i64)], c: &[i64]) -> Result<(i64, i64), RunError> {
    let mut parts = 1;
    let mut b = 0;
    for a in axes {
        let i = mesh.iter().position(|(n, _)| n == a).ok_or_else(|| {
            RunError::Program(format!("sharding names axis `{a}`, not in the mesh"))
        })?;
        parts *= mesh[i].1;
        b = b * mesh[i].1 + c[i];
    }
    Ok((parts, b))
}

/// Copies between a global row-major tensor and one block of it (`origin` in elements per
/// dimension, `local` dims); `to_local` says the direction.
fn copy_block(
    global_dims: &[i64],
    origin: &[i64],
    local: &[i64],
    elem: usize,
    global: &mut [u8],
    block_bytes: &mut [u8],
    to_local: bool,
) {
    let rank = global_dims.len();
    if local.contains(&0) {
        return;
    }
    if rank == 0 {
        let n = elem.min(global.len()).min(block_bytes.len());
        if to_local {
            block_bytes[..n].copy_from_slice(&global[..n]);
        } else {
            global[..n].copy_from_slice(&block_bytes[..n]);
        }
        return;
    }
    let row = local[rank - 1] as usize * elem;
    let rows: i64 = local[..rank - 1].iter().product();
    let mut idx = vec![0i64; rank - 1];
    for r in 0..rows as usize {
        let mut off = 0i64;
        for k in 0..rank - 1 {
            off = off * global_dims[k] + origin[k] + idx[k];
        }
        let g = ((off * global_dims[rank - 1] + origin[rank - 1]) as usize) * elem;
        let l = r * row;
        if to_local {
            block_bytes[l..l + row].copy_from_slice(&global[g..g + row]);
        } else {
            global[g..g + row].copy_from_slice(&block_bytes[l..l + row]);
        }
        for k in (0..rank - 1).rev() {
            idx[k] += 1;
            if idx[k] < local[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Device `d`'s shard of `t` split as `sharding` says over `mesh` (`None`: not split).
pub(super) fn shard_of(
    t: &HostTensor,
    sharding: &DimSharding,
    mesh: &[(String, i64)],
    d: usize,
) -> Result<Option<HostTensor>, RunError> {
    if sharding.iter().all(|a| a.is_empty()) {
        return Ok(None);
    }
    let dims = t.dims();
    if sharding.len() != dims.len() {
        return Err(RunError::Program(format!(
            "a sharding of rank {} for {}",
            sharding.len(),
            t.ty()
        )));
    }
    let c = coords(mesh, d);
    let mut local = Vec::with_capacity(dims.len());
    let mut origin = Vec::with_capacity(dims.len());
    for (i, axes) in sharding.iter().enumerate() {
        let (parts, b) = block(axes, mesh, &c)?;
        if dims[i] % parts != 0 {
            return Err(RunError::Input(format!(
                "{}: dimension {i} ({}) does not split into {parts} equal parts",
                t.ty(),
                dims[i]
            )));
        }
        let l = dims[i] / parts;
        local.push(l);
        origin.push(b * l);
    }
    let elem = t.element().byte_size();
    let ty = TensorType::new(t.element(), local.clone()).map_err(|e| RunError::Input(e.message))?;
    let mut out = vec![0u8; super::host::byte_len(&ty)?];
    let mut g = t.bytes().to_vec();
    copy_block(dims, &origin, &local, elem, &mut g, &mut out, true);
    HostTensor::from_bytes(ty, out).map(Some)
}

/// Result `k` from its shards (one per device): split as `sharding` says, else the same on
/// every device (device 0's is taken, if it has the result's global shape).
pub(super) fn assemble(
    k: usize,
    shards: Vec<HostTensor>,
    sharding: Option<&DimSharding>,
    global: Option<TensorType>,
    mesh: &[(String, i64)],
) -> Result<HostTensor, RunError> {
    let split = sharding.is_some_and(|s| s.iter().any(|a| !a.is_empty()));
    if shards.len() <= 1 || !split {
        let first = shards
            .into_iter()
            .next()
            .ok_or_else(|| RunError::Output(format!("result {k} has no buffer")))?;
        if let Some(g) = &global
            && g != first.ty()
        {
            return Err(RunError::Output(format!(
                "result {k} is {} on a device, but the program returns {g} and does not \
                     say how it is split",
                first.ty()
            )));
        }
        return Ok(first);
    }
    let sharding = sharding.cloned().unwrap_or_default();
    let local = shards[0].dims().to_vec();
    let element: ElementType = shards[0].element();
    if sharding.len() != local.len() {
        return Err(RunError::Output(format!(
            "result {k}: a sharding of rank {} for shards {}",
            sharding.len(),
            shards[0].ty()
        )));
    }
    if let Some(s) = shards.iter().find(|s| s.ty() != shards[0].ty()) {
        return Err(RunError::Output(format!(
            "result {k}: shards of different types ({} and {})",
            shards[0].ty(),
            s.ty()
        )));
    }
    let mut gdims = Vec::with_capacity(local.len());
    for (i, axes) in sharding.iter().enumerate() {
        let (parts, _) = block(axes, mesh, &coords(mesh, 0))?;
        gdims.push(local.get(i).copied().unwrap_or(1) * parts);
    }
    let gty = TensorType::new(element, gdims.clone()).map_err(|e| RunError::Output(e.message))?;
    let elem = element.byte_size();
    let mut out =
        vec![0u8; super::host::byte_len(&gty).map_err(|e| RunError::Output(e.to_string()))?];
    for (d, s) in shards.iter().enumerate() {
        let c = coords(mesh, d);
        let mut origin = Vec::with_capacity(local.len());
        for (i, axes) in sharding.iter().enumerate() {
            let (_, b) = block(axes, mesh, &c)?;
            origin.push(b * local[i]);
        }
        let mut bytes = s.bytes().to_vec();
        copy_block(&gdims, &origin, &local, elem, &mut out, &mut bytes, false);
    }
    if let Some(g) = &global
        && *g != gty
    {
        return Err(RunError::Output(format!(
            "result {k} assembles to {gty} from its shards, but the program returns {g}"
        )));
    }
    HostTensor::from_bytes(gty, out).map_err(|e| RunError::Output(e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn shards_split_and_assemble_back() {
        let mesh = vec![("x".to_string(), 2), ("y".to_string(), 2)];
        let vals: Vec<i32> = (0..24).collect();
        let t = HostTensor::from_slice(&[4, 6], &vals).unwrap();
        let sharding = vec![vec!["x".to_string()], vec!["y".to_string()]];
        let shards: Vec<HostTensor> = (0..4)
            .map(|d| shard_of(&t, &sharding, &mesh, d).unwrap().unwrap())
            .collect();
        assert_eq!(shards[0].to_vec::<i32>().unwrap(), vec![0, 1, 2, 6, 7, 8]);
        assert_eq!(shards[1].to_vec::<i32>().unwrap(), vec![3, 4, 5, 9, 10, 11]);
        assert_eq!(shards[2].dims(), &[2, 3]);
        let back = assemble(0, shards, Some(&sharding), None, &mesh).unwrap();
        assert_eq!(back, t);
        let rows = vec![vec!["x".to_string(), "y".to_string()], vec![]];
        let s3 = shard_of(&t, &rows, &mesh, 3).unwrap().unwrap();
        assert_eq!(s3.to_vec::<i32>().unwrap(), (18..24).collect::<Vec<_>>());
        let bad = HostTensor::from_slice(&[3, 6], &vals[..18]).unwrap();
        assert!(shard_of(&bad, &sharding, &mesh, 0).is_err());
        // Assembling checks ranks, shard types and the program's result type.
        let rows_only = vec![vec!["x".to_string()]];
        let four = |d: usize| shard_of(&t, &sharding, &mesh, d).unwrap().unwrap();
        let e = assemble(0, (0..4).map(four).collect(), Some(&rows_only), None, &mesh);
        assert!(e.unwrap_err().to_string().contains("a sharding of rank 1"));
        let mut mixed: Vec<HostTensor> = (0..4).map(four).collect();
        mixed[3] = HostTensor::from_slice(&[1, 3], &[0i32; 3]).unwrap();
        let e = assemble(0, mixed, Some(&sharding), None, &mesh);
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("shards of different types")
        );
        let wrong = TensorType::new(ElementType::I32, [8, 6]).unwrap();
        let e = assemble(
            0,
            (0..4).map(four).collect(),
            Some(&sharding),
            Some(wrong),
            &mesh,
        );
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("assembles to tensor<4x6xi32>")
        );
    }
}
