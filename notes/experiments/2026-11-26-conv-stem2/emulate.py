# Emulates hpdl__conv_fm (the few-channel rung in hpdl_cuda.cuh, double-buffered patch of commit
# 9ab2d0a) lane by lane: the block's setup (filter rows, the two offset tables, the zeroed region
# between the patch buffers), the patch staging in pairs (4-byte cp.async aligned as x, the shift;
# or plain loads where W C is odd), persistent blocks alternating buffers (NaN in shared memory
# never written), the A fragments from the patch, ldmatrix's B fragments, mma.sync m16n8k16, the
# epilogue. Compared with a direct convolution on small integers (exact in f64); prints the
# largest difference and the count of outputs never written (NaN) per shape, then (tile width
# log2, tiles, KP, NJ, x_pairs); then the same for the backward-filter kernel
# (hpdl__conv_fm_wgrad), its fields NT and x_pairs. Adapted from
# notes/experiments/2026-11-26-conv-stem/emulate.py.
# Shapes: (N, C, H, W, K, R, S, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w).
# usage: python3 emulate.py  (NumPy; about a minute)
import numpy as np

def tile_shape(P, Q, R, S, sh, sw, dh, dw):
    best=-1; bp=0; res=None
    for l in range(6,2,-1):
        tw=1<<l; th=128//tw
        padded=(P+th-1)//th*th*((Q+tw-1)//tw*tw)
        patch=((th-1)*sh+(R-1)*dh+1)*((tw-1)*sw+(S-1)*dw+1)
        if best<0 or padded<best or (padded==best and patch<bp):
            best=padded; bp=patch; res=l
    return res

GRID=3  # persistent blocks along x: each walks tiles b, b + GRID, ... alternating its buffers

def stage(buf, xflat, n, H, W, C, ih0, e0, patch_h, ld, x_pairs):
    """hpdl__conv_fm_stage: writes buf (a view of the block's shared memory), returns the shift."""
    x_row=W*C; shift=(e0&1) if x_pairs else 0; pairs=ld//2; xbase=n*H*x_row
    for u in range(patch_h*pairs):
        i=u//pairs; e=2*(u-i*pairs); ih=ih0+i; ge=e0-shift+e
        row_in=0<=ih<H; dst=i*ld+e
        if x_pairs:
            assert ge%2==0 and x_row%2==0
            inn=row_in and 0<=ge<x_row
            buf[dst]=xflat[xbase+ih*x_row+ge] if inn else 0
            buf[dst+1]=xflat[xbase+ih*x_row+ge+1] if inn else 0
        else:
            buf[dst]=xflat[xbase+ih*x_row+ge] if (row_in and 0<=ge<x_row) else 0
            buf[dst+1]=xflat[xbase+ih*x_row+ge+1] if (row_in and 0<=ge+1<x_row) else 0
    return shift

def emulate(N,C,H,W,K,R,S,sh,sw,ph,pw,dh,dw):
    rng=np.random.default_rng(1)
    x=rng.integers(-3,4,size=(N,H,W,C)).astype(np.float64)
    w=rng.integers(-3,4,size=(K,R,S,C)).astype(np.float64)
    P=(H+2*ph-dh*(R-1)-1)//sh+1; Q=(W+2*pw-dw*(S-1)-1)//sw+1
    # reference
    ref=np.zeros((N,P,Q,K))
    xp=np.zeros((N,H+2*ph+sh*4+dh*R,W+2*pw+sw*4+dw*S,C)); xp[:,ph:ph+H,pw:pw+W,:]=x
    for r in range(R):
        for s in range(S):
            patch=xp[:,r*dh:r*dh+sh*(P-1)+1:sh, s*dw:s*dw+sw*(Q-1)+1:sw,:]
            ref+=np.einsum('npqc,kc->npqk',patch,w[:,r,s,:])
    twl=tile_shape(P,Q,R,S,sh,sw,dh,dw); tw=1<<twl; th=128>>twl
    tiles_h=(P+th-1)//th; tiles_w=(Q+tw-1)//tw; tiles=N*tiles_h*tiles_w
    patch_h=(th-1)*sh+(R-1)*dh+1; patch_w=(tw-1)*sw+(S-1)*dw+1
    taps=R*S*C; kp=(taps+15)//16*16
    NJ=2 if K<=16 else 4 if K<=32 else 8; BN=8*NJ
    ld=(patch_w*C+2)//2*2; pb=(patch_h*ld+7)//8*8; x_pairs=(W*C)%2==0
    y=np.full((N,P,Q,K),np.nan)
    xflat=x.reshape(-1)
    wflat=w.reshape(-1)
    patch_elems=patch_h*patch_w*C
    for by in range((K+BN-1)//BN):
        n0=by*BN; wld=kp+8
        ws=np.zeros(BN*wld)
        for e in range(BN*kp):
            row=e//kp; kk=e-row*kp
            ws[row*wld+kk]= wflat[(n0+row)*taps+kk] if (n0+row<K and kk<taps) else 0
        koff=np.zeros((2,kp),dtype=np.int64)
        for kk in range(kp):
            j=kk%16; slot=kk//16*16+j%8//2*4+j//8*2+j%2
            c=kk%C; r=kk//C//S; s=kk//C%S
            koff[0,slot]=r*dh*ld+s*dw*C+c if kk<taps else pb
            koff[1,slot]=r*dh*ld+s*dw*C+c if kk<taps else -pb
        for bx in range(min(GRID,tiles)):
          smem=np.full(3*pb,np.nan); smem[pb:2*pb]=0   # buffer 0, zeros, buffer 1
          for it,t in enumerate(range(bx,tiles,GRID)):
            b=it%2
            tw_i=t%tiles_w; th_i=t//tiles_w%tiles_h; n=t//tiles_w//tiles_h
            oh0=th_i*th; ow0=tw_i*tw
            ih0=oh0*sh-ph; e0=(ow0*sw-pw)*C
            view=smem[2*b*pb:2*b*pb+pb]
            shift=stage(view, xflat, n, H, W, C, ih0, e0, patch_h, ld, x_pairs)
            pbase=2*b*pb+shift
            for warp in range(4):
                acc=np.zeros((32,2,NJ,4))
                # rowbases per lane
                rb=np.zeros((32,4),dtype=np.int64)
                for lane in range(32):
                    for u in range(4):
                        m=warp*32+u//2*16+u%2*8+lane//4
                        rb[lane,u]=(m>>twl)*sh*ld+(m&(tw-1))*sw*C
                for ks in range(kp//16):
                    af=np.zeros((32,2,4,2)); bf=np.zeros((32,NJ,2,2))
                    for lane in range(32):
                        o=koff[b,ks*16+lane%4*4: ks*16+lane%4*4+4]
                        for i in range(2):
                            p0=pbase+rb[lane,2*i]; p1=pbase+rb[lane,2*i+1]
                            for q in (p0+o).tolist()+(p1+o).tolist(): assert 0<=q<3*pb
                            af[lane,i,0]=[smem[p0+o[0]],smem[p0+o[1]]]
                            af[lane,i,1]=[smem[p1+o[0]],smem[p1+o[1]]]
                            af[lane,i,2]=[smem[p0+o[2]],smem[p0+o[3]]]
                            af[lane,i,3]=[smem[p1+o[2]],smem[p1+o[3]]]
                    # ldmatrix: lane l's address for matrix l//8 row l%8
                    for j in range(0,NJ,2):
                        addr=[ (l//16*8+l%8)*wld + l//8%2*8 + j*8*wld + ks*16 for l in range(32)]
                        for l in range(32):
                            regs=[]
                            for mi in range(4):
                                a=addr[mi*8+l//4]
                                regs.append([ws[a+2*(l%4)], ws[a+2*(l%4)+1]])
                            bf[l,j,0]=regs[0]; bf[l,j,1]=regs[1]; bf[l,j+1,0]=regs[2]; bf[l,j+1,1]=regs[3]
                    # mma: rebuild A (16x16) and B (16x8) per (i,j), then distribute D
                    for i in range(2):
                        A=np.zeros((16,16))
                        for l in range(32):
                            g=l//4; tt=l%4
                            A[g,2*tt:2*tt+2]=af[l,i,0]; A[g+8,2*tt:2*tt+2]=af[l,i,1]
                            A[g,2*tt+8:2*tt+10]=af[l,i,2]; A[g+8,2*tt+8:2*tt+10]=af[l,i,3]
                        for j in range(NJ):
                            B=np.zeros((16,8))
                            for l in range(32):
                                g=l//4; tt=l%4
                                B[2*tt:2*tt+2,g]=bf[l,j,0]; B[2*tt+8:2*tt+10,g]=bf[l,j,1]
                            D=A@B
                            for l in range(32):
                                g=l//4; tt=l%4
                                acc[l,i,j]+= [D[g,2*tt],D[g,2*tt+1],D[g+8,2*tt],D[g+8,2*tt+1]]
                # store
                LD=BN+8; tile=np.full(32*LD,np.nan)
                for l in range(32):
                    g=l//4; tt=l%4
                    for i in range(2):
                        for j in range(NJ):
                            p=(i*16+g)*LD+j*8+2*tt
                            tile[p:p+2]=acc[l,i,j,0:2]; tile[p+8*LD:p+8*LD+2]=acc[l,i,j,2:4]
                CH=BN//8; m0=warp*32
                for u in range(32*CH):
                    row=u//CH; col=u%CH*8; m=m0+row
                    oh=oh0+(m>>twl); ow=ow0+(m&(tw-1))
                    if oh>=P or ow>=Q or n0+col>=K: continue
                    for e in range(8):
                        if n0+col+e<K: y[n,oh,ow,n0+col+e]=tile[row*LD+col+e]
    err=np.nanmax(np.abs(y-ref)) if not np.isnan(y).any() else float('nan')
    return err, np.isnan(y).sum(), (twl, tiles, kp, NJ, x_pairs)

def emulate_wgrad(N,C,H,W,K,R,S,sh,sw,ph,pw,dh,dw):
    """hpdl__conv_fm_wgrad lane by lane: dW[k, (r,s,c)] = sum over pixels of dY[pixel, k] X~[pixel, (r,s,c)]."""
    rng=np.random.default_rng(2)
    x=rng.integers(-3,4,size=(N,H,W,C)).astype(np.float64)
    P=(H+2*ph-dh*(R-1)-1)//sh+1; Q=(W+2*pw-dw*(S-1)-1)//sw+1
    dy=rng.integers(-3,4,size=(N,P,Q,K)).astype(np.float64)
    ref=np.zeros((K,R,S,C))
    xp=np.zeros((N,H+2*ph+sh*4+dh*R,W+2*pw+sw*4+dw*S,C)); xp[:,ph:ph+H,pw:pw+W,:]=x
    for r in range(R):
        for s in range(S):
            patch=xp[:,r*dh:r*dh+sh*(P-1)+1:sh, s*dw:s*dw+sw*(Q-1)+1:sw,:]
            ref[:,r,s,:]=np.einsum('npqc,npqk->kc',patch,dy)
    twl=tile_shape(P,Q,R,S,sh,sw,dh,dw); tw=1<<twl; th=128>>twl
    tiles_h=(P+th-1)//th; tiles_w=(Q+tw-1)//tw; tiles=N*tiles_h*tiles_w
    patch_h=(th-1)*sh+(R-1)*dh+1; patch_w=(tw-1)*sw+(S-1)*dw+1
    taps=R*S*C; kp=(taps+15)//16*16; patch_elems=patch_h*patch_w*C
    NT=1 if kp<=32 else 2 if kp<=64 else 3 if kp<=96 else 5
    ld=(patch_w*C+2)//2*2; pb=(patch_h*ld+7)//8*8; x_pairs=(W*C)%2==0
    BN=64; LD=BN+8
    dwsum=np.zeros(K*taps)
    xflat=x.reshape(-1); dyflat=dy.reshape(-1)
    pixoff=np.zeros(128,dtype=np.int64)
    for m in range(128):
        j=m%16; slot=m//16*16+j%8//2*4+j//8*2+j%2
        pixoff[slot]=(m>>twl)*sh*ld+(m&(tw-1))*sw*C
    for bz in range((kp//8+4*NT-1)//(4*NT)):
        for by in range((K+BN-1)//BN):
            n0=by*BN
            koff=np.zeros((4,32,NT),dtype=np.int64); col0=np.zeros((4,NT),dtype=np.int64)
            for warp in range(4):
                for j in range(NT):
                    col0[warp,j]=(bz*4*NT+warp+4*j)*8
                    for lane in range(32):
                        kk=col0[warp,j]+lane//4; c=kk%C; r=kk//C//S; s=kk//C%S
                        koff[warp,lane,j]=r*dh*ld+s*dw*C+c if kk<taps else 0
            for bx in range(min(GRID,tiles)):
              smem=np.full(2*pb,np.nan)   # buffer 0, buffer 1
              acc=np.zeros((4,32,4,NT,4))
              for it,t in enumerate(range(bx,tiles,GRID)):
                bi=it%2
                tw_i=t%tiles_w; th_i=t//tiles_w%tiles_h; n=t//tiles_w//tiles_h
                oh0=th_i*th; ow0=tw_i*tw
                ih0=oh0*sh-ph; e0=(ow0*sw-pw)*C
                shift=stage(smem[bi*pb:(bi+1)*pb], xflat, n, H, W, C, ih0, e0, patch_h, ld, x_pairs)
                pbase=bi*pb+shift
                dys=np.full(128*LD,np.nan)
                for u in range(128*8):
                    m=u//8; col=u%8*8; oh=oh0+(m>>twl); ow=ow0+(m&(tw-1)); inn=oh<P and ow<Q
                    for e in range(8):
                        dys[m*LD+col+e]=dyflat[((n*P+oh)*Q+ow)*K+n0+col+e] if (inn and n0+col+e<K) else 0
                for warp in range(4):
                    for ks in range(8):
                        # ldmatrix.trans: lane l gives row (pixel) address of matrix l//8 row l%8
                        af=np.zeros((32,4,4,2))
                        for i in range(4):
                            addr=[(l//16*8+l%8)*LD+l//8%2*8+ks*16*LD+i*16 for l in range(32)]
                            for l in range(32):
                                for mi in range(4):
                                    a=addr[mi*8+l%4*2]; b=addr[mi*8+l%4*2+1]   # trans: rows 2(l%4), +1, column l//4
                                    af[l,i,mi]=[dys[a+l//4], dys[b+l//4]]
                        bf=np.zeros((32,NT,2,2))
                        for l in range(32):
                            o=pixoff[ks*16+l%4*4:ks*16+l%4*4+4]
                            for j in range(NT):
                                p=pbase+koff[warp,l,j]
                                for q in (p+o).tolist(): assert bi*pb<=q<(bi+1)*pb
                                bf[l,j,0]=[smem[p+o[0]],smem[p+o[1]]]; bf[l,j,1]=[smem[p+o[2]],smem[p+o[3]]]
                        for i in range(4):
                            A=np.zeros((16,16))
                            for l in range(32):
                                g=l//4; tt=l%4
                                A[g,2*tt:2*tt+2]=af[l,i,0]; A[g+8,2*tt:2*tt+2]=af[l,i,1]
                                A[g,2*tt+8:2*tt+10]=af[l,i,2]; A[g+8,2*tt+8:2*tt+10]=af[l,i,3]
                            for j in range(NT):
                                B=np.zeros((16,8))
                                for l in range(32):
                                    g=l//4; tt=l%4
                                    B[2*tt:2*tt+2,g]=bf[l,j,0]; B[2*tt+8:2*tt+10,g]=bf[l,j,1]
                                D=A@B
                                for l in range(32):
                                    g=l//4; tt=l%4
                                    acc[warp,l,i,j]+=[D[g,2*tt],D[g,2*tt+1],D[g+8,2*tt],D[g+8,2*tt+1]]
              for warp in range(4):
                for l in range(32):
                    for i in range(4):
                        for j in range(NT):
                            for e in range(4):
                                k=n0+i*16+l//4+e//2*8; kk=col0[warp,j]+l%4*2+e%2
                                if k<K and kk<taps: dwsum[k*taps+kk]+=acc[warp,l,i,j,e]
    return np.abs(dwsum.reshape(K,R,S,C)-ref).max(), (twl,tiles,kp,NT,x_pairs)

cases=[(1,3,37,29,64,7,7,2,2,3,3,1,1),(2,3,32,32,64,3,3,1,1,1,1,1,1),(2,1,23,19,20,5,5,1,1,2,2,1,1),
       (1,4,33,17,72,3,3,1,1,1,1,1,1),(1,8,19,26,13,3,3,2,2,0,0,1,1),(1,4,9,8,3,3,3,1,1,2,2,2,2),(1,5,9,11,7,3,3,2,2,0,0,1,1),
       (2,3,38,40,64,7,7,2,2,3,3,1,1)]
for c in cases:
    print('forward', c, emulate(*c))
for c in [cases[0], cases[2], cases[3], cases[5], (1,3,20,18,70,3,3,1,1,1,1,1,1), (1,8,14,12,9,5,5,1,1,2,2,1,1), cases[7]]:
    print('backward-filter', c, emulate_wgrad(*c))
