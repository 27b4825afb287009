/* Test helper: splits a safetensors file into two shards the way Hugging Face's save_pretrained
 * does (model-00001-of-00002.safetensors, model-00002-of-00002.safetensors and
 * model.safetensors.index.json with a weight_map), independently of src/io/safetensors.c:
 *     shard_safetensors IN.safetensors OUT_DIR */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)len);
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return p;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    size_t n;
    unsigned char *p = slurp(argv[1], &n);
    if (!p || n < 8) return 1;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | p[i];
    cJSON *h = cJSON_ParseWithLength((const char *)p + 8, (size_t)hlen);
    if (!h) return 1;
    const unsigned char *data = p + 8 + hlen;
    int count = 0;
    for (cJSON *e = h->child; e; e = e->next)
        count += strcmp(e->string, "__metadata__") != 0;
    cJSON *index = cJSON_CreateObject(), *wm = cJSON_AddObjectToObject(index, "weight_map");
    cJSON_AddObjectToObject(index, "metadata");
    int k = 0;
    for (int shard = 0; shard < 2; shard++) {
        char name[64], path[1024];
        snprintf(name, sizeof name, "model-%05d-of-00002.safetensors", shard + 1);
        snprintf(path, sizeof path, "%s/%s", argv[2], name);
        cJSON *hdr = cJSON_CreateObject();
        size_t off = 0;
        int i = 0;
        unsigned char *body = malloc(n);
        for (cJSON *e = h->child; e; e = e->next) {
            if (strcmp(e->string, "__metadata__") == 0) continue;
            int mine = shard == 0 ? i < count / 2 : i >= count / 2;
            i++;
            if (!mine) continue;
            cJSON *offs = cJSON_GetObjectItem(e, "data_offsets");
            size_t b = (size_t)cJSON_GetArrayItem(offs, 0)->valuedouble,
                   en = (size_t)cJSON_GetArrayItem(offs, 1)->valuedouble;
            memcpy(body + off, data + b, en - b);
            cJSON *t = cJSON_Duplicate(e, 1);
            cJSON *no = cJSON_CreateArray();
            cJSON_AddItemToArray(no, cJSON_CreateNumber((double)off));
            cJSON_AddItemToArray(no, cJSON_CreateNumber((double)(off + en - b)));
            cJSON_ReplaceItemInObject(t, "data_offsets", no);
            cJSON_AddItemToObject(hdr, e->string, t);
            cJSON_AddStringToObject(wm, e->string, name);
            off += en - b;
            k++;
        }
        char *ht = cJSON_PrintUnformatted(hdr);
        uint64_t hl = strlen(ht);
        /* the safetensors library pads the header with spaces to a multiple of 8 bytes */
        char *padded = realloc(ht, hl + 8);
        if (!padded) return 1;
        ht = padded;
        while (hl % 8)
            ht[hl++] = ' ';
        ht[hl] = 0;
        FILE *f = fopen(path, "wb");
        if (!f) return 1;
        for (int b = 0; b < 8; b++)
            fputc((int)(hl >> (8 * b) & 0xff), f);
        fwrite(ht, 1, hl, f);
        fwrite(body, 1, off, f);
        fclose(f);
        free(ht);
        free(body);
        cJSON_Delete(hdr);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", argv[2]);
    FILE *f = fopen(path, "w");
    char *it = cJSON_Print(index);
    fputs(it, f);
    fclose(f);
    free(it);
    cJSON_Delete(index);
    cJSON_Delete(h);
    free(p);
    return k == count ? 0 : 1;
}
