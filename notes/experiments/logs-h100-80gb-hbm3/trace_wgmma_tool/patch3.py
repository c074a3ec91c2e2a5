src=open('/work/main/hpdl_cuda.cuh').read()
k0=src.index('__global__ void __launch_bounds__(384, 1) hpdl__gemm_wgmma_ws(')
k1=src.index('/* C (M x N, row-major) for hpdl__wg_store_tma')
body=src[k0:k1]
def rep(old,new):
    global body
    assert body.count(old)==1,(old,body.count(old))
    body=body.replace(old,new)
rep('    hpdl__wg_work cur, next;\n','    hpdl__wg_work cur, next;\n    TR_ENTRY();\n')
rep('            const int um = cur.um, un = cur.un;\n#pragma unroll\n            for (i = 0; i < 128; i++) d[i] = 0;\n',
    '            const int um = cur.um, un = cur.un;\n            TG(n, 0);\n#pragma unroll\n            for (i = 0; i < 128; i++) d[i] = 0;\n            TG(n, 1);\n')
rep('                unsigned char *st = smem + it % S * STAGE;\n                hpdl__mbar_wait(&full[it % S], (unsigned)(it / S) & 1);\n                hpdl__wg_mma_stage',
    '                unsigned char *st = smem + it % S * STAGE;\n                if (kt == w.k0) TR(n, 0);\n                hpdl__mbar_wait(&full[it % S], (unsigned)(it / S) & 1);\n                if (kt == w.k0) TR(n, 1);\n                hpdl__wg_mma_stage')
rep('            hpdl__wg_fence_acc(d);\n            if (w.k1 < KT)','            hpdl__wg_fence_acc(d);\n            TR(n, 2);\n            if (w.k1 < KT)')
rep('                              epi + (wg - 1) * HPDL__WG_EPI_BYTES / 4);\n        }\n','                              epi + (wg - 1) * HPDL__WG_EPI_BYTES / 4);\n            TR(n, 3);\n        }\n')
rep('        hpdl__wg_epilogue_done();\n','        hpdl__wg_epilogue_done();\n        TR_EXIT();\n')
src=src[:k0]+body+src[k1:]
open('hpdl_cuda_traced.cuh','w').write(src)
