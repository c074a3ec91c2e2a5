/* Scratch program of the 2026-11-26 large-batch exploration (not built by the Makefile): one run of
   the 784-H-10 MLP at batch B for E epochs, flags as key=value: opt=sgd|mom|adam|larsm|lamb, lr,
   mom (momentum or Adam beta1), warm (warm-up epochs), eta (LARS), clip (global gradient-norm cap),
   norm=0 raw | 1 global mean/std | 2 per-pixel mean/std (std floor `floor`) | 3 per-pixel mean,
   global std | 4 per-pixel mean only, tail=1 keeps the short last batch, ntest test images.
   gcc -std=c99 -O2 -march=native -I. explore.c -lm; run from the repository root. */
#include "hpdl.h"
static int H=2048, B=16384, EPOCHS=5, NORM=0, TAIL=1, NTEST=10000; static double LR=0.05, MOM=0, WARM=0, ETA=0.001, WD=0, B2=0.999, CLIP=0;
static const char *OPT="sgd"; static double FLOOR=1e-2;
int main(int argc,char**argv){
  int a; for(a=1;a<argc;a++){ char*k=argv[a],*v=strchr(k,'='); *v++=0;
    if(!strcmp(k,"H"))H=atoi(v); else if(!strcmp(k,"B"))B=atoi(v); else if(!strcmp(k,"E"))EPOCHS=atoi(v);
    else if(!strcmp(k,"norm"))NORM=atoi(v); else if(!strcmp(k,"tail"))TAIL=atoi(v); else if(!strcmp(k,"ntest"))NTEST=atoi(v);
    else if(!strcmp(k,"lr"))LR=atof(v); else if(!strcmp(k,"mom"))MOM=atof(v); else if(!strcmp(k,"warm"))WARM=atof(v);
    else if(!strcmp(k,"eta"))ETA=atof(v); else if(!strcmp(k,"wd"))WD=atof(v); else if(!strcmp(k,"opt"))OPT=v; else if(!strcmp(k,"b2"))B2=atof(v); else if(!strcmp(k,"floor"))FLOOR=atof(v); else if(!strcmp(k,"clip"))CLIP=atof(v);
    else {fprintf(stderr,"?%s\n",k);return 2;} }
  hpdl_dataset tr,te; HPDL_CHECK(hpdl_idx_load_dir("data/fashion-mnist",1,&tr)); HPDL_CHECK(hpdl_idx_load_dir("data/fashion-mnist",0,&te));
  if(NORM==1){ double s=0,s2=0; size_t i,n=(size_t)tr.n*784; for(i=0;i<n;i++){s+=tr.images[i];s2+=tr.images[i]*tr.images[i];}
    double m=s/n, sd=sqrt(s2/n-m*m); printf("mean %g std %g\n",m,sd); hpdl_dataset_normalize(&tr,m,sd); hpdl_dataset_normalize(&te,m,sd);}
  if(NORM>=2){ static double mu[784],sd[784]; int64_t r; int c; for(r=0;r<tr.n;r++)for(c=0;c<784;c++){double x=tr.images[r*784+c];mu[c]+=x;sd[c]+=x*x;}
    double tot=0; for(c=0;c<784;c++){mu[c]/=tr.n; sd[c]=sqrt(sd[c]/tr.n-mu[c]*mu[c]); tot+=sd[c]*sd[c]; if(sd[c]<FLOOR) sd[c]=FLOOR;}
    if(NORM==3) for(c=0;c<784;c++) sd[c]=sqrt(tot/784);
    if(NORM==4) for(c=0;c<784;c++) sd[c]=1;
    for(r=0;r<tr.n;r++)for(c=0;c<784;c++)tr.images[r*784+c]=(tr.images[r*784+c]-mu[c])/sd[c];
    for(r=0;r<te.n;r++)for(c=0;c<784;c++)te.images[r*784+c]=(te.images[r*784+c]-mu[c])/sd[c]; }
  int widths[3]={784,H,10}; hpdl_mlp_f32 m,g,s1,s2; hpdl_mlp_work_f32 w;
  HPDL_CHECK(hpdl_mlp_create_f32(&m,3,widths,HPDL_ACT_RELU,1)); HPDL_CHECK(hpdl_mlp_create_zero_f32(&g,3,widths,HPDL_ACT_RELU));
  HPDL_CHECK(hpdl_mlp_create_zero_f32(&s1,3,widths,HPDL_ACT_RELU)); HPDL_CHECK(hpdl_mlp_create_zero_f32(&s2,3,widths,HPDL_ACT_RELU));
  HPDL_CHECK(hpdl_mlp_work_create_f32(&w,&m,B));
  int64_t steps_per = TAIL ? (tr.n + B-1)/B : tr.n/B, total=steps_per*EPOCHS, t=0; int e;
  double warm_steps = WARM*steps_per;
  for(e=0;e<EPOCHS;e++){ double sum=0; int64_t s; HPDL_CHECK(hpdl_dataset_shuffle(&tr,1+e));
    for(s=0;s<steps_per;s++,t++){ int64_t i=s*B; int b = (int)(i+B<=tr.n?B:tr.n-i); double loss;
      HPDL_CHECK(hpdl_mlp_backward_f32(&m,&w,b,tr.images+i*784,tr.labels+i,&g,&loss)); sum+=loss;
      double lr = warm_steps>0 && t<warm_steps ? LR*(t+1)/warm_steps : LR; int l;
      double gn=0; if(CLIP>0){ for(l=0;l<2;l++){ size_t nw=(size_t)widths[l]*widths[l+1]; size_t k; for(k=0;k<nw;k++)gn+=g.W[l][k]*g.W[l][k]; for(k=0;k<(size_t)widths[l+1];k++)gn+=g.b[l][k]*g.b[l][k];} gn=sqrt(gn); if(gn>CLIP) lr*=CLIP/gn; }
      for(l=0;l<2;l++){ int64_t nw=(int64_t)widths[l]*widths[l+1], nb=widths[l+1];
        if(!strcmp(OPT,"sgd")||!strcmp(OPT,"mom")){ HPDL_CHECK(hpdl_sgd_momentum_f32(nw,m.W[l],g.W[l],s1.W[l],lr,MOM,WD,0)); HPDL_CHECK(hpdl_sgd_momentum_f32(nb,m.b[l],g.b[l],s1.b[l],lr,MOM,0,0)); }
        else if(!strcmp(OPT,"adam")){ HPDL_CHECK(hpdl_adamw_f32(nw,m.W[l],g.W[l],s1.W[l],s2.W[l],t+1,lr,MOM,B2,1e-8,WD)); HPDL_CHECK(hpdl_adamw_f32(nb,m.b[l],g.b[l],s1.b[l],s2.b[l],t+1,lr,MOM,B2,1e-8,0)); }
        else if(!strcmp(OPT,"larsm")){ /* momentum on trust-scaled gradient */
          double wn=0,gn2=0; int64_t k; for(k=0;k<nw;k++){wn+=m.W[l][k]*(double)m.W[l][k]; gn2+=g.W[l][k]*(double)g.W[l][k];}
          double tr_=ETA*sqrt(wn)/(sqrt(gn2)+WD*sqrt(wn)); for(k=0;k<nw;k++){ s1.W[l][k]=MOM*s1.W[l][k]+tr_*lr*(g.W[l][k]+WD*m.W[l][k]); m.W[l][k]-=s1.W[l][k]; }
          for(k=0;k<nb;k++){ s1.b[l][k]=MOM*s1.b[l][k]+lr*g.b[l][k]; m.b[l][k]-=s1.b[l][k]; } }
        else if(!strcmp(OPT,"lamb")){ /* adam direction, layer trust ratio ||w||/||u|| */
          double b1=MOM, c1=1-pow(b1,t+1), c2=1-pow(B2,t+1); int64_t k; double wn=0,un=0;
          float *u=(float*)malloc(nw*4);
          for(k=0;k<nw;k++){ s1.W[l][k]=b1*s1.W[l][k]+(1-b1)*g.W[l][k]; s2.W[l][k]=B2*s2.W[l][k]+(1-B2)*g.W[l][k]*g.W[l][k];
            u[k]=(s1.W[l][k]/c1)/(sqrt(s2.W[l][k]/c2)+1e-6)+WD*m.W[l][k]; wn+=m.W[l][k]*(double)m.W[l][k]; un+=u[k]*(double)u[k]; }
          double r = wn>0&&un>0 ? sqrt(wn)/sqrt(un) : 1; for(k=0;k<nw;k++) m.W[l][k]-=lr*r*u[k]; free(u);
          HPDL_CHECK(hpdl_adamw_f32(nb,m.b[l],g.b[l],s1.b[l],s2.b[l],t+1,lr*0.01,MOM,B2,1e-8,0)); }
      } }
    double acc; HPDL_CHECK(hpdl_mlp_accuracy_f32(&m,&w,NTEST,te.images,te.labels,&acc));
    printf("e%d loss %.4g acc %.4f\n",e+1,sum/steps_per,acc); fflush(stdout); }
  return 0; }
